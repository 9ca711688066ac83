"""What a cell stores is bounded: 40 cells of megabyte answers grow the store by kilobytes.

The agent is a real app over 127.0.0.1 answering the tiny suite: a third of
the cases get a 3 MB output (allowed: under the 4 MiB cap), a third the
40-byte `1e1000000` that used to be written out as a million digits, the
rest a small output. Grading sees every output whole (a check measures the
3 MB string); the store keeps a placeholder for the big ones and nothing
for the refused ones, and its file grows by a bounded amount.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agents import Outcome
from evals import make_plan, start, work
from evals._cell import MAX_STORED_OUTPUT_BYTES, STORED_HEAD_CHARS, stored_output
from evals.reports._model import build_report
from evals.suites import install_suite
from records import new_key, open_store
from schema.jsontext import dumps
from tests._manifests import http_manifest
from tests._servers import serve
from tests.evals.suites._make import SUITE_YAML, case, make_suite

AGENT = "test/big-answers"
BLOB = 3_000_000
SUITE = SUITE_YAML.replace(
    "checks:\n",
    "checks:\n  - {name: blob, path: $.output.blob, length: {path: $.expected.n}}\n",
)


def _answer(subject: str) -> bytes:
    kind = subject.split()[0]
    if kind == "hostile":
        return b'{"output":{"label":"account","sum":1e1000000}}'
    blob = "x" * (BLOB if kind == "big" else 10)
    return dumps({"output": {"label": "account", "blob": blob}}).encode()


def _app() -> Starlette:
    async def invoke(request: Request) -> Response:
        subject = (await request.json())["input"]["subject"]
        return Response(_answer(subject), media_type="application/json")

    async def who(request: Request) -> Response:
        return Response(dumps({"id": AGENT, "version": "1.0.0", "capabilities": []}))

    return Starlette(
        routes=[
            Route("/", invoke, methods=["POST"]),
            Route("/.well-known/holon-agent", who, methods=["GET"]),
        ]
    )


@pytest.fixture
def endpoint() -> Iterator[str]:
    with serve(_app()) as url:
        yield url + "/"


def _cases(prefix: str) -> list[dict[str, Any]]:
    out = []
    for index in range(20):
        kind = ("big", "hostile", "small")[index % 3]
        item = case(f"{prefix}{index}", f"{kind} {index}", "account")
        item["expected"]["n"] = BLOB if kind == "big" else 10
        out.append(item)
    return out


def _db_bytes(database: Path) -> int:
    # Measured closed: the last connection checkpoints the WAL into the file.
    return database.stat().st_size


@pytest.mark.slow
def test_forty_cells_of_huge_answers_grow_the_store_by_a_bounded_amount(
    tmp_path: Path, endpoint: str
) -> None:
    database = tmp_path / "holon.db"
    url = f"sqlite:///{database}"
    key = new_key()
    store = open_store(url, secret_key=key, auto_upgrade=True)
    suite = make_suite(tmp_path, suite_yaml=SUITE, public=_cases("p"), holdout=_cases("h"))
    install_suite(store, suite)
    store.agents.register(http_manifest(AGENT, endpoint))
    store.close()
    before = _db_bytes(database)

    store = open_store(url, secret_key=key)
    try:
        home = tmp_path / "home"
        plan = make_plan(store, AGENT, home=home, concurrency=4)
        info = work(store, plan, start(store, plan), home=home)
        assert info.status == "done"
        cells = store.evals.cells(info.id)
        assert len(cells) == 40
        report = build_report(store, info.id)  # reports read the placeholders like any value
    finally:
        store.close()
    grown = _db_bytes(database) - before
    # Unbounded, the 14 big cells alone would store 42 MB (and the 13 hostile
    # ones 14 MB of digits); bounded, each cell is a row of about a kilobyte.
    print(f"store grew by {grown} bytes for 40 cells")
    assert grown <= 40 * 16 * 1024, grown

    big_text = dumps({"label": "account", "blob": "x" * BLOB})
    kinds = {"big": 0, "hostile": 0, "small": 0}
    for cell in cells:
        kind = cell.case_id[1:]
        kind = ("big", "hostile", "small")[int(kind) % 3]
        kinds[kind] += 1
        if kind == "hostile":
            assert cell.outcome_code == "invalid_response" and cell.output is None
            assert cell.outcome is not None and "$.output.sum" in cell.outcome["error"]
            continue
        assert cell.outcome_code == "ok" and cell.passed, cell  # graded on the whole output
        if kind == "big":
            assert cell.output == {
                "$truncated": {
                    "bytes": len(big_text),
                    "sha256": hashlib.sha256(big_text.encode()).hexdigest(),
                    "head": big_text[:STORED_HEAD_CHARS],
                }
            }
        else:
            assert cell.output == {"label": "account", "blob": "x" * 10}
    assert kinds == {"big": 14, "hostile": 14, "small": 12}
    assert len(dumps(report)) < 2 * 1024 * 1024


def test_stored_output_keeps_small_outputs_and_bounds_big_ones() -> None:
    small = Outcome(code="ok", request_id="r", output={"a": 1}, output_bytes=7)
    assert stored_output(small) is small.output
    unknown = Outcome(code="ok", request_id="r", output=["é" * 10])  # size not known: measured
    assert stored_output(unknown) == ["é" * 10]
    big_value = {"text": "é" * MAX_STORED_OUTPUT_BYTES}  # 2 bytes a character as UTF-8
    big = Outcome(code="ok", request_id="r", output=big_value, output_bytes=None)
    placeholder = stored_output(big)
    text = dumps(big_value)
    assert placeholder == {
        "$truncated": {
            "bytes": len(text.encode()),
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
            "head": text[:STORED_HEAD_CHARS],
        }
    }
    failed = Outcome(code="invalid_response", request_id="r", output_bytes=None)
    assert stored_output(failed) is None
