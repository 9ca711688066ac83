"""A `math.add` suite and a real holon-http adder over loopback that counts its requests.

The adder answers the right sum unless told to answer something else (a
contract-breaking output, a deep or huge one), so one agent can be evaluated
and then misbehave live.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from evals.suites import install_suite
from records import Store
from tests._servers import serve
from tests.gateway.server._agent import manifest
from tests.gateway.server._gateway import Gateway, running_gateway

CAPABILITY = "math.add"
AGENT = "acme/adder"
# Mandate fields with room for many calls.
MONTHLY: dict[str, Any] = {"budget": {"amount_usd": "1", "period": "month"}}

INPUT_SCHEMA = {
    "type": "object",
    "required": ["a", "b"],
    "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
    "additionalProperties": False,
}
OUTPUT_SCHEMA = {
    "type": "object",
    "required": ["sum"],
    "properties": {"sum": {"type": "number"}},
}
SUITE_YAML = """\
schema_version: 1
id: adder
version: 1
capability: math.add
title: Adding two numbers
input_schema: {$ref: schemas/input.json}
output_schema: {$ref: schemas/output.json}
limits: {max_cost_usd: "0.01", timeout_s: 5}
threshold: 0.5
checks:
  - {name: sum, path: $.output.sum, equals: {path: $.expected.sum}}
public: {file: cases/public.jsonl}
holdout: {file: cases/holdout.jsonl}
"""


def write_adder_suite(
    directory: Path, output_schema: dict[str, Any] = OUTPUT_SCHEMA, cases: int = 4
) -> Path:
    """The suite's directory: `cases` public and holdout cases (the holdout's from a=100).

    Under another output schema (a contract test's), the cases' expected sums are
    not answers that schema need accept: the suite says they are facts."""
    (directory / "schemas").mkdir(parents=True, exist_ok=True)
    (directory / "cases").mkdir(exist_ok=True)
    text = SUITE_YAML
    if output_schema != OUTPUT_SCHEMA:
        text = text.replace("threshold: 0.5\n", "threshold: 0.5\nexpected_kind: facts\n")
    (directory / "suite.yaml").write_text(text)
    (directory / "schemas" / "input.json").write_text(json.dumps(INPUT_SCHEMA))
    (directory / "schemas" / "output.json").write_text(json.dumps(output_schema))
    for split, offset in (("public", 0), ("holdout", 100)):
        lines = [
            json.dumps(
                {
                    "id": f"{split[0]}{i}",
                    "input": {"a": i + offset, "b": 2},
                    "expected": {"sum": i + offset + 2},
                }
            )
            for i in range(cases)
        ]
        (directory / "cases" / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return directory


def install_adder_suite(store: Store, root: Path, cases: int = 4) -> None:
    install_suite(store, write_adder_suite(root / "adder-suite", cases=cases))


@dataclass
class Adder:
    """What the adder received, and what it answers (None: the right sum)."""

    requests: list[Any] = field(default_factory=list)
    answer: Callable[[Any], Any] | None = None


def adder_app(adder: Adder, agent_id: str = AGENT) -> Starlette:
    async def call(request: Request) -> Response:
        body = json.loads(await request.body())
        adder.requests.append(body)
        value = body["input"]
        if adder.answer is not None:
            return JSONResponse({"output": adder.answer(value)})
        return JSONResponse({"output": {"sum": value["a"] + value["b"]}})

    return agent_app(call, agent_id)


def agent_app(call: Callable[[Request], Awaitable[Response]], agent_id: str = AGENT) -> Starlette:
    """An adder at /agent answered by `call`, with its identity document."""

    async def identity(request: Request) -> Response:
        return JSONResponse({"id": agent_id, "version": "1.0.0", "capabilities": [CAPABILITY]})

    return Starlette(
        routes=[
            Route("/agent", call, methods=["POST"]),
            Route("/agent/.well-known/holon-agent", identity, methods=["GET"]),
        ]
    )


def adder_manifest(agent_id: str, url: str, **changes: Any) -> dict[str, Any]:
    """The test agent's manifest (tests/gateway/server/_agent.py), claiming the adder's
    capability."""
    return manifest(agent_id, url, **{"capabilities": [CAPABILITY], **changes})


@contextmanager
def serving_adder(
    store: Store, adder: Adder, agent_id: str = AGENT, **changes: Any
) -> Iterator[str]:
    """The adder served on 127.0.0.1 and registered; yields its id."""
    with serve(adder_app(adder, agent_id)) as url:
        store.agents.register(adder_manifest(agent_id, url, **changes))
        yield agent_id


@contextmanager
def adder_gateway(
    store: Store,
    tmp_path: Path,
    adder: Adder,
    mandate: dict[str, Any] | None = None,
    **options: Any,
) -> Iterator[Gateway]:
    """The math.add suite installed, `adder` served as acme/adder, finance-bot's mandate
    (`adder_mandate` with the fields of `mandate`) granted, and a gateway over them
    (`options`: running_gateway's)."""
    install_adder_suite(store, tmp_path)
    store.mandates.grant(adder_mandate(**(mandate or {})))
    with (
        serving_adder(store, adder),
        running_gateway(store, tmp_path / "home", **options) as gateway,
    ):
        yield gateway


@contextmanager
def serving_adder_world(store: Store, root: Path, app: Starlette, cases: int) -> Iterator[str]:
    """The adder suite with `cases` public and holdout cases installed, and `app` served
    and registered as acme/adder; yields its URL."""
    install_adder_suite(store, root, cases)
    with serve(app) as url:
        store.agents.register(adder_manifest(AGENT, url))
        yield url


def adder_mandate(**fields: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "schema_version": 1,
        "id": "finance-adding",
        "holder": "finance-bot",
        "capabilities": [CAPABILITY],
        "max_cost_per_call_usd": "0.01",
    }
    document.update(fields)
    return document
