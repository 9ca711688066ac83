"""The order of refusals (docs/gateway.md): what needs no input, then the input, then the
reservation. A caller no mandate lets call a capability never learns its schema; an input
outside the contract never reaches the agent nor reserves; a budget that cannot pay one
call says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import Executor
from gateway.live import LiveCalls, Lookups
from records import Store, period_key, utcnow
from schema.errors import Denied, HolonError, InvalidInput
from tests.gateway.server._gateway import install_tiny, mandate, register_triage

AGENT = "acme/ticket-triage"
CAPABILITY = "ticket.classify"
BAD = {"subject": 5, "body": "x"}  # the tiny suite's input schema wants a string
GOOD = {"subject": "Refund please", "body": "I was charged twice."}


async def _invoke(
    store: Store, input: Any, *, routed: bool = False, caller: str = "finance-bot"
) -> Any:
    async with Executor() as executor:
        calls = LiveCalls(store, executor, lookups=Lookups(store, ttl_s=0))
        try:
            if routed:
                return await calls.route(caller, CAPABILITY, input)
            return await calls.invoke(caller, AGENT, CAPABILITY, input)
        except HolonError as exc:
            return exc


@pytest.mark.anyio
@pytest.mark.parametrize("routed", [False, True], ids=["direct", "routed"])
@pytest.mark.parametrize(
    ("grant", "code"),
    [
        (None, "no_mandate"),
        ({"capabilities": ["invoice.extract"]}, "capability_not_allowed"),
        ({"agents": ["other/*"]}, "agent_not_allowed"),
    ],
)
async def test_no_mandate_for_the_capability_is_told_before_the_input_is_read(
    store: Store, tmp_path: Path, routed: bool, grant: dict[str, Any] | None, code: str
) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    if grant is not None:
        store.mandates.grant(mandate(**grant))
    error = await _invoke(store, BAD, routed=routed)
    assert isinstance(error, Denied), error
    assert error.code == code and error.http_status == 403
    assert "path" not in error.details and "suite" not in error.details  # no schema leaks
    (row,) = store.ledger.list().items
    assert (row.decision, row.reason) == ("deny", code)


@pytest.mark.anyio
@pytest.mark.parametrize("routed", [False, True], ids=["direct", "routed"])
async def test_an_allowed_caller_with_a_bad_input_reserves_nothing(
    store: Store, tmp_path: Path, routed: bool
) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(
        mandate(
            budget={"amount_usd": "1", "period": "day"},
            rate_limit={"calls": 1, "per": "hour", "burst": 1},
        )
    )
    error = await _invoke(store, BAD, routed=routed)
    assert isinstance(error, InvalidInput), error
    assert error.http_status == 400 and error.details["path"] == "$.input.subject"
    (row,) = store.ledger.list().items
    assert (row.decision, row.reason, row.reserved_usd, row.mandate_id) == (
        "deny",
        "invalid_input",
        0,
        None,
    )
    assert store.ledger.budget("finance-tickets", period_key("day", utcnow())) == (0, 0)
    # It took no token: the one call the bucket holds still goes.
    answer = await _invoke(store, GOOD, routed=routed)
    assert answer["mandate"] == "finance-tickets"


@pytest.mark.anyio
async def test_a_budget_smaller_than_one_call_says_so(store: Store, tmp_path: Path) -> None:
    register_triage(store)
    store.mandates.grant(mandate(budget={"amount_usd": "0.005", "period": "day"}))
    error = await _invoke(store, GOOD)
    assert isinstance(error, Denied), error
    assert (error.code, error.http_status) == ("budget_too_small", 402)
    assert error.details["amount_usd"] == "0.005"
    assert error.details["max_cost_per_call_usd"] == "0.01"
    assert "spent_usd" not in error.details
    (row,) = store.ledger.list().items
    assert (row.decision, row.reason) == ("deny", "budget_too_small")
