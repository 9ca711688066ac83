"""One ledger row per routed call, whatever routing tried (docs/gateway.md, "Routing").

Two candidate agents, each allowed by a mandate of its own with a budget for
one call: the first call goes to the first candidate, the second passes it
over (its budget is spent) and goes to the second, the next two are denied by
both. Four calls, four rows: each denial once, under one request id, with the
candidates passed over and why; the second call's reservation names the one
it passed over.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agents import Executor
from gateway.live import LiveCalls, Lookups
from records import Store
from schema.errors import HolonError
from tests.gateway.server._agent import manifest
from tests.gateway.server._gateway import mandate, register_triage

CAPABILITY = "ticket.classify"
INPUT = {"subject": "Refund please", "body": "I was charged twice."}
PRICED = {"pricing": {"per_call_usd": "0.01"}, "limits": {"max_cost_usd": "0.01", "timeout_s": 5}}


async def _route(store: Store, n: int) -> list[Any]:
    out: list[Any] = []
    async with Executor() as executor:
        calls = LiveCalls(store, executor, lookups=Lookups(store, ttl_s=0))
        for _ in range(n):
            try:
                out.append(await calls.route("finance-bot", CAPABILITY, INPUT))
            except HolonError as exc:
                out.append(exc)
    return out


def _one_call_budget(mandate_id: str, agent: str) -> dict[str, Any]:
    return mandate(
        id=mandate_id,
        agents=[agent],
        budget={"amount_usd": "0.01", "period": "day"},
    )


@pytest.mark.anyio
async def test_four_routed_calls_write_four_rows(store: Store) -> None:
    register_triage(store, "acme/alpha", **PRICED)
    register_triage(store, "acme/beta", **PRICED)
    store.mandates.grant(_one_call_budget("a-alpha", "acme/alpha"))
    store.mandates.grant(_one_call_budget("b-beta", "acme/beta"))
    first, second, third, fourth = await _route(store, 4)
    assert (first["agent"], second["agent"]) == ("acme/alpha", "acme/beta")
    assert second["routing"]["tried"] == [
        {"agent": "acme/alpha", "decision": "deny", "reason": "budget_exhausted"}
    ]
    for denied in (third, fourth):
        assert denied.code == "budget_exhausted" and denied.http_status == 402
    rows = store.ledger.list().items
    assert len(rows) == 4
    assert len({r.request_id for r in rows}) == 4
    assert Counter((r.decision, r.reason) for r in rows) == {
        ("allow", None): 2,
        ("deny", "budget_exhausted"): 2,
    }
    (passed,) = [r for r in rows if r.request_id == second["request_id"]]
    assert passed.details["passed_over"] == [
        {
            "agent": "acme/alpha",
            "decision": "deny",
            "reason": "budget_exhausted",
            "mandate": "a-alpha",
        }
    ]
    for row in (r for r in rows if r.decision == "deny"):
        assert row.agent_id is None  # no agent was chosen
        assert [(c["agent"], c["reason"]) for c in row.details["candidates"]] == [
            ("acme/alpha", "budget_exhausted"),
            ("acme/beta", "budget_exhausted"),
        ]
        by_agent = {(m["agent"], m["mandate"]): m["reason"] for m in row.details["mandates"]}
        assert by_agent[("acme/alpha", "a-alpha")] == "budget_exhausted"
        assert by_agent[("acme/beta", "b-beta")] == "budget_exhausted"
        assert by_agent[("acme/alpha", "b-beta")] == "agent_not_allowed"


@pytest.mark.anyio
async def test_a_rate_limited_routed_call_writes_one_row(store: Store) -> None:
    register_triage(store, "acme/alpha")
    register_triage(store, "acme/beta")
    store.mandates.grant(mandate(rate_limit={"calls": 1, "per": "hour", "burst": 1}))
    answered, limited, again = await _route(store, 3)
    assert answered["agent"] == "acme/alpha"
    assert limited.code == "rate_limited" and limited.http_status == 429
    assert limited.details["retry_after_s"] > 0
    rows = store.ledger.list().items
    assert Counter((r.decision, r.reason) for r in rows) == {
        ("allow", None): 1,
        ("deny", "rate_limited"): 2,
    }


@pytest.mark.anyio
async def test_an_unreachable_agent_keeps_its_reservation_row(store: Store) -> None:
    """The agent tried was called (and found unreachable): its reservation took a rate token
    and held the budget, so its row stays, settled at zero; the answered call's row names it."""
    store.agents.register(manifest("acme/a-dead", "http://127.0.0.1:9", pricing={}))
    register_triage(store, "acme/beta")
    store.mandates.grant(mandate(budget={"amount_usd": "1", "period": "day"}))
    (answer,) = await _route(store, 1)
    assert answer["agent"] == "acme/beta"
    assert answer["routing"]["tried"] == [{"agent": "acme/a-dead", "outcome": "unreachable"}]
    rows = {r.agent_id: r for r in store.ledger.list().items}
    assert set(rows) == {"acme/a-dead", "acme/beta"}
    dead, beta = rows["acme/a-dead"], rows["acme/beta"]
    assert (dead.decision, dead.outcome_code, dead.cost_usd) == ("allow", "unreachable", 0)
    assert beta.request_id == answer["request_id"] != dead.request_id
    assert beta.details["passed_over"] == [
        {"agent": "acme/a-dead", "outcome": "unreachable", "request_id": dead.request_id}
    ]
