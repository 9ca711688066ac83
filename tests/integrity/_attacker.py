"""An agent author with nothing but an org token, its agent, and the suites it attacks.

The agent is one loopback HTTP app serving every version the author registers, at
`/v/<version>`: it answers a coin question (`{"text"}` -> `{"label": "a" | "b"}`) as the
author's current plan for that version says, and logs every input it is sent, so the
author learns the holdout's inputs from the first eval on (as a real agent would).

The suites (capabilities `coin.fixed` and `coin.generated`): 10 public cases
and 150 holdout cases whose labels are a coin with P(a) = 0.535 and nothing in
the text that predicts them. A no-skill agent's best
answer is "a" everywhere: right on 0.535 of fresh cases (0.5333 of the stored file,
80 of 150). One suite stores its holdout; the other generates it (an extension
generator whose seeds come from the store's secret).
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from schema.jsontext import loads

HOLDOUT = 150
MAJORITY = 80  # of the stored file's labels, "a" (0.5333)
P_MAJORITY = 0.535

Answer = Callable[[str], str]

SUITE = """\
schema_version: 1
id: {id}
version: 1
capability: coin.{kind}
title: Call the coin
input_schema: {{$ref: schemas/input.json}}
output_schema: {{$ref: schemas/output.json}}
limits: {{max_cost_usd: "0.01", timeout_s: 5}}
threshold: 0.5
checks:
  - {{name: label, path: $.output.label, equals: {{path: $.expected.label}}}}
public: {{file: cases/public.jsonl}}
{holdout}
"""

GENERATOR = """
import random
from evals.fixtures import Fixture, Generator

def _produce(seed, params):
    rng = random.Random(seed)
    text = "%016x" % rng.getrandbits(64)
    return Fixture(value={"text": text}, truth={"label": "a" if rng.random() < 0.535 else "b"})

GENERATOR = Generator(
    name="coin",
    version=1,
    description="a coin no text predicts",
    params_schema={"type": "object", "additionalProperties": False},
    produce=_produce,
)
"""


def _case(case_id: str, text: str, label: str) -> dict[str, Any]:
    return {"id": case_id, "input": {"text": text}, "expected": {"label": label}}


def write_suite(root: Path, kind: str, name: str = "") -> Path:
    """A coin suite with a stored (`fixed`) or generated holdout; its directory. A `name`
    makes it a suite of its own (id `coin-KIND-NAME`, capability `coin.KIND_NAME`), with
    instance sets and budgets of its own; the stored file's labels are the same."""
    rng = random.Random(f"coin-{kind}")
    suite_id = f"coin-{kind}" + (f"-{name}" if name else "")
    directory = root / suite_id
    (directory / "cases").mkdir(parents=True)
    (directory / "schemas").mkdir()
    (directory / "schemas" / "input.json").write_text(
        json.dumps(
            {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}
        )
    )
    (directory / "schemas" / "output.json").write_text(
        json.dumps(
            {"type": "object", "required": ["label"], "properties": {"label": {"enum": ["a", "b"]}}}
        )
    )
    public = [_case(f"p{i}", f"{rng.getrandbits(64):016x}", rng.choice("ab")) for i in range(10)]
    (directory / "cases" / "public.jsonl").write_text("".join(json.dumps(c) + "\n" for c in public))
    if kind == "fixed":
        labels = ["a"] * MAJORITY + ["b"] * (HOLDOUT - MAJORITY)
        rng.shuffle(labels)
        held = [
            _case(f"h{i}", f"{rng.getrandbits(64):016x}", label) for i, label in enumerate(labels)
        ]
        (directory / "cases" / "holdout.jsonl").write_text(
            "".join(json.dumps(c) + "\n" for c in held)
        )
        holdout = "holdout: {file: cases/holdout.jsonl}"
    else:
        (directory / "ext").mkdir()
        (directory / "ext" / "generator.py").write_text(GENERATOR)
        holdout = (
            "extensions: {generators: {coin: ext/generator.py}}\n"
            "fixtures: {coin: {generator: coin}}\n"
            "holdout:\n  generate:\n    count: 150\n"
            "    case: {input: {$fixture: coin}, expected: {$truth: coin}}"
        )
    (directory / "suite.yaml").write_text(
        SUITE.format(id=suite_id, kind=kind + (f"_{name}" if name else ""), holdout=holdout)
    )
    return directory


class AttackerAgent:
    """Every version of the author's agent, served by one app; what each was sent."""

    def __init__(self) -> None:
        self.plans: dict[str, Answer] = {}
        self.seen: dict[str, list[str]] = {}  # version -> texts, in the order sent
        self.lock = threading.Lock()

    def app(self, identity_of: Callable[[str], tuple[str, str]]) -> Starlette:
        """`identity_of(version)`: the (agent id, capability) the version was registered as."""

        async def call(request: Request) -> Response:
            version = request.path_params["version"]
            text = str(loads(await request.body())["input"]["text"])
            with self.lock:
                self.seen.setdefault(version, []).append(text)
            return JSONResponse({"output": {"label": self.plans[version](text)}})

        async def identity(request: Request) -> Response:
            version = request.path_params["version"]
            agent_id, capability = identity_of(version)
            return JSONResponse({"id": agent_id, "version": version, "capabilities": [capability]})

        return Starlette(
            routes=[
                Route("/v/{version}", call, methods=["POST"]),
                Route("/v/{version}/.well-known/holon-agent", identity, methods=["GET"]),
            ]
        )
