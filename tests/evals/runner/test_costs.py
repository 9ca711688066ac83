"""Costs in evals: the suite's per-case cap, enforced by the executor, recorded on cells.

The agent is a real app over 127.0.0.1 that answers the tiny suite's cases
correctly, counts the requests that reach it and reports whatever usage a
test gives it. The tiny suite's cap is $0.01 a case; its public tickets say
"Cannot log in" (account), its holdout tickets "Refund please" (billing).

- a priced cost over the cap is `cost_exceeded`: a failed cell however right
  the answer, never graded, its output not kept, its usage and cost kept;
  a cost of exactly the cap is not over it;
- a per-call price alone over the cap: the agent is never called (zero
  requests reach it), and the eval still completes, every cell cost_exceeded;
- with no pricing, the agent's own `cost_usd` is the cost (`reported`), and
  over the cap it is cost_exceeded too; with pricing, a reported cost is ignored.

Eval calls write no ledger row: there is no ledger yet, so that is not tested here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from evals import make_plan, start, work
from evals.suites import install_suite
from records import AgentRecord, EvalCell, EvalInfo, Store
from tests._manifests import http_manifest
from tests._servers import serve
from tests.evals.suites._make import tiny_suite

CAP = Decimal("0.01")  # the tiny suite's limits.max_cost_usd
AGENT = "test/recorder"

Usage = Callable[[dict[str, Any]], dict[str, Any]]


class Recorder:
    """A holon-http agent that labels tiny-suite tickets right and counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.usage: Usage = lambda ticket: {"input_tokens": 10, "output_tokens": 5}

    def app(self) -> Starlette:
        async def invoke(request: Request) -> JSONResponse:
            self.calls += 1
            ticket = (await request.json())["input"]
            label = "billing" if "refund" in ticket["subject"].lower() else "account"
            return JSONResponse({"output": {"label": label}, "usage": self.usage(ticket)})

        async def who(request: Request) -> JSONResponse:
            return JSONResponse({"id": AGENT, "version": "1.0.0", "capabilities": []})

        return Starlette(
            routes=[
                Route("/", invoke, methods=["POST"]),
                Route("/.well-known/holon-agent", who, methods=["GET"]),
            ]
        )


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def endpoint(recorder: Recorder) -> Iterator[str]:
    with serve(recorder.app()) as url:
        yield url + "/"


def _eval(
    store: Store, tmp_path: Path, endpoint: str, pricing: dict[str, str] | None
) -> tuple[EvalInfo, list[EvalCell]]:
    install_suite(store, tiny_suite(tmp_path, 4))
    priced = {} if pricing is None else {"pricing": pricing}
    store.agents.register(http_manifest(AGENT, endpoint, **priced))
    home = tmp_path / "home"
    plan = make_plan(store, AGENT, home=home, concurrency=4)
    info = work(store, plan, start(store, plan), home=home)
    assert info.status == "done" and info.result is not None
    return info, store.evals.cells(info.id)


def _by_split(cells: list[EvalCell]) -> dict[str, list[EvalCell]]:
    return {split: [c for c in cells if c.split == split] for split in ("public", "holdout")}


def _cost(cell: EvalCell) -> Decimal:
    assert cell.cost_usd is not None
    return Decimal(cell.cost_usd)


def _outcome(cell: EvalCell) -> dict[str, Any]:
    assert cell.outcome is not None
    return cell.outcome


def _record(store: Store) -> AgentRecord:
    record = store.evals.current_record(AGENT)
    assert record is not None
    return record


def test_a_priced_cost_over_the_cap_fails_the_cell(
    store: Store, tmp_path: Path, recorder: Recorder, endpoint: str
) -> None:
    # $0.001 a call + $1 per 1k output tokens: 9 tokens cost exactly the cap,
    # 10 cost a thousandth of a cent more.
    recorder.usage = lambda ticket: {
        "input_tokens": 12,
        "output_tokens": 10 if "refund" in ticket["subject"].lower() else 9,
    }
    pricing = {"per_call_usd": "0.001", "per_1k_output_tokens_usd": "1"}
    info, cells = _eval(store, tmp_path, endpoint, pricing)
    assert recorder.calls == 8
    split = _by_split(cells)

    for cell in split["public"]:  # at the cap: not over it, graded, passed
        assert (cell.outcome_code, cell.passed, _cost(cell)) == ("ok", True, CAP)
        assert cell.checks is not None and cell.output == {"label": "account"}
    for cell in split["holdout"]:  # the right answer, over the cap: a failure
        assert (cell.outcome_code, cell.passed) == ("cost_exceeded", False)
        assert _cost(cell) == Decimal("0.011")
        assert cell.checks is None and cell.output is None and cell.attempts == 1
        assert _outcome(cell)["cost_source"] == "priced"
        assert _outcome(cell)["usage"] == {"input_tokens": 12, "output_tokens": 10}
        assert "exceeds the cap 0.01" in _outcome(cell)["error"]

    assert info.result is not None
    summary = info.result["summary"]
    assert summary["outcomes"] == {"cost_exceeded": 4, "ok": 4}
    # What the calls cost stays on the eval, capped or not: 4 × 0.010 + 4 × 0.011.
    assert Decimal(summary["cost_usd"]) == Decimal("0.084")
    suite = _record(store).suites["tiny"]
    assert suite.public.passed == 4 and suite.holdout.passed == 0
    assert _record(store).eval_score == 0


def test_a_per_call_price_over_the_cap_never_calls_the_agent(
    store: Store, tmp_path: Path, recorder: Recorder, endpoint: str
) -> None:
    info, cells = _eval(store, tmp_path, endpoint, {"per_call_usd": "0.0100001"})
    assert recorder.calls == 0  # not one request reached it
    assert len(cells) == 8
    for cell in cells:
        assert (cell.status, cell.outcome_code, cell.passed) == ("done", "cost_exceeded", False)
        assert cell.attempts == 0 and _cost(cell) == 0 and cell.checks is None
        assert _outcome(cell)["attempts"] == [] and _outcome(cell)["cost_source"] == "none"
        assert "the agent was not called" in _outcome(cell)["error"]
    assert info.result is not None
    assert info.result["summary"]["outcomes"] == {"cost_exceeded": 8}
    record = _record(store)
    assert record.eval_score == 0 and record.eval_id == info.id


def test_a_per_call_price_at_the_cap_is_called(
    store: Store, tmp_path: Path, recorder: Recorder, endpoint: str
) -> None:
    # The control for the test above: the counter counts, and "alone exceeds" is strict.
    _, cells = _eval(store, tmp_path, endpoint, {"per_call_usd": "0.01"})
    assert recorder.calls == 8
    assert {(c.outcome_code, c.passed, _cost(c)) for c in cells} == {("ok", True, CAP)}


@pytest.mark.parametrize(("reported", "code"), [("0.0100000001", "cost_exceeded"), ("0.004", "ok")])
def test_without_pricing_the_reported_cost_is_held_to_the_cap(
    store: Store, tmp_path: Path, recorder: Recorder, endpoint: str, reported: str, code: str
) -> None:
    recorder.usage = lambda ticket: {"output_tokens": 3, "cost_usd": reported}
    info, cells = _eval(store, tmp_path, endpoint, pricing=None)
    assert recorder.calls == 8
    for cell in cells:
        assert (cell.outcome_code, cell.passed) == (code, code == "ok")
        assert cell.cost_usd == reported  # the agent's own figure, as it sent it
        assert _outcome(cell)["cost_source"] == "reported"
        assert _outcome(cell)["usage"] == {"output_tokens": 3, "cost_usd": reported}
    assert info.result is not None
    assert Decimal(info.result["summary"]["cost_usd"]) == 8 * Decimal(reported)


def test_with_pricing_a_reported_cost_is_ignored(
    store: Store, tmp_path: Path, recorder: Recorder, endpoint: str
) -> None:
    # The agent claims $5 a call; the manifest prices it at $0.002 + $0.5 per 1k input tokens.
    recorder.usage = lambda ticket: {"input_tokens": 8, "output_tokens": 2, "cost_usd": "5"}
    pricing = {"per_call_usd": "0.002", "per_1k_input_tokens_usd": "0.5"}
    info, cells = _eval(store, tmp_path, endpoint, pricing)
    for cell in cells:
        assert (cell.outcome_code, cell.passed) == ("ok", True)
        assert _cost(cell) == Decimal("0.006")
        assert _outcome(cell)["cost_source"] == "priced"
        assert _outcome(cell)["usage"] == {"input_tokens": 8, "output_tokens": 2, "cost_usd": "5"}
    assert info.result is not None
    assert Decimal(info.result["summary"]["cost_usd"]) == Decimal("0.048")
    assert Decimal(store.evals.progress(info.id)["cost_usd"]) == Decimal("0.048")
