"""Live conformance (docs/gateway.md, "Live conformance"): counted exactly, over a window,
and a mandate's `max_live_violation_rate` gate.

The counters are kept in the ledger's transaction (records._conformance), so
they are tested on the store on both backends; the gate is pure
(gateway.mandates) and tested on its own, then through a real gateway whose
agent breaks the contract.
"""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import insert

from gateway.mandates import DENY_REASONS, decide_one, mandate_from_dict
from gateway.server import ENDPOINTS
from gateway.server._openapi import openapi
from gateway.server._routes_calls import INVOKE_KEYS
from records import (
    CallEntry,
    LiveConformance,
    Store,
    live_window_start,
    utcnow,
)
from records._models import LiveConformanceRow
from schema.errors import MandateError
from tests.gateway.server._adder import (
    AGENT,
    CAPABILITY,
    Adder,
    adder_mandate,
    install_adder_suite,
    serving_adder,
)
from tests.gateway.server._gateway import Gateway, running_gateway

CALLER = "caller:finance-bot"


# -- the counters, in the ledger's transaction -----------------------------------


def _reserve(store: Store, n: int, agent: str = AGENT) -> str:
    entry = store.ledger.reserve(
        CallEntry(f"req-{agent}-{n}", "finance-bot", CAPABILITY, agent, "1.0.0"),
        mandate_id="finance-adding",
        cap=Decimal("0.01"),
        expires_at=utcnow() + timedelta(minutes=5),
        budget=None,
        details={},
    )
    return entry.id  # type: ignore[union-attr]


def _settle(store: Store, ledger_id: str, code: str) -> None:
    store.ledger.settle(
        ledger_id, outcome_code=code, cost=Decimal("0.001"), cost_source="priced", latency_ms=1.0
    )


def test_counts_are_kept_with_the_settlement(store: Store) -> None:
    codes = ["ok", "ok", "invalid_output", "agent_error", "timeout", "refused", "cancelled"]
    ids = [_reserve(store, n) for n in range(len(codes))]
    for ledger_id, code in zip(ids, codes, strict=True):
        _settle(store, ledger_id, code)
    _settle(store, ids[2], "invalid_output")  # settling again changes nothing (idempotent)
    _settle(store, ids[0], "invalid_output")
    for n, agent in enumerate([AGENT, None]):  # the caller's: one direct, one routed
        store.ledger.deny(
            CallEntry(f"bad-{n}", "finance-bot", CAPABILITY, agent, None),
            mandate_id=None,
            reason="invalid_input",
            details={},
        )
    store.ledger.deny(  # another reason: not an input violation
        CallEntry("denied", "finance-bot", CAPABILITY, AGENT, "1.0.0"),
        mandate_id="finance-adding",
        reason="budget_exhausted",
        details={},
    )
    mine = store.conformance.of(AGENT, CAPABILITY)
    # Answers are ok and invalid_output; failures and refusals are not answers.
    assert (mine.calls, mine.violations, mine.input_violations) == (3, 1, 1)
    assert mine.rate == Decimal("0.333333")
    routed = store.conformance.of("", CAPABILITY)
    assert (routed.calls, routed.violations, routed.input_violations) == (0, 0, 1)
    assert routed.rate is None
    assert store.conformance.of("acme/other", CAPABILITY) == LiveConformance(
        "acme/other", CAPABILITY, live_window_start(utcnow())
    )


def test_a_group_of_writes_counts_once_per_row(store: Store) -> None:
    """The gateway's batches (one transaction for a loop turn's writes) count each row once."""
    from records import Settle

    ids = [_reserve(store, n) for n in range(4)]
    writes = [Settle(i, "invalid_output", Decimal(0), "none", 1.0) for i in ids]
    writes.append(Settle(ids[0], "invalid_output", Decimal(0), "none", 1.0))  # twice in a group
    store.ledger.apply(writes)
    counted = store.conformance.of(AGENT, CAPABILITY)
    assert (counted.calls, counted.violations) == (4, 4)


def test_the_window_is_the_last_seven_days(store: Store) -> None:
    now = utcnow()
    days = {8: (100, 100), 7: (50, 50), 6: (10, 1), 0: (5, 0)}  # days ago: (calls, violations)
    with store.write() as session:
        for ago, (calls, bad) in days.items():
            session.execute(
                insert(LiveConformanceRow).values(
                    agent_id=AGENT,
                    capability=CAPABILITY,
                    day=(now - timedelta(days=ago)).strftime("%Y-%m-%d"),
                    calls=calls,
                    violations=bad,
                    input_violations=0,
                )
            )
    window = store.conformance.of(AGENT, CAPABILITY, now=now)
    assert (window.calls, window.violations) == (15, 1)  # today and the six days before
    assert window.since == (now - timedelta(days=6)).strftime("%Y-%m-%d")
    assert store.conformance.window() == [window]


# -- the gate, pure --------------------------------------------------------------


def _mandate(**fields: Any) -> Any:
    return mandate_from_dict(adder_mandate(**fields))


def _decide(mandate: Any, live: LiveConformance | None) -> Any:
    return decide_one(
        mandate,
        agent_id=AGENT,
        agent_version="1.0.0",
        capability=CAPABILITY,
        record=None,
        now=utcnow(),
        live=live,
    )


def _live(calls: int, violations: int) -> LiveConformance:
    return LiveConformance(AGENT, CAPABILITY, "2026-11-25", calls, violations, 7)


def test_the_reason_is_checked_after_the_records_and_before_the_budget() -> None:
    at = DENY_REASONS.index("live_violation_rate_above_maximum")
    assert DENY_REASONS[at - 1] == "live_score_below_minimum"
    assert DENY_REASONS[at + 1] == "budget_too_small"


def test_the_gate_denies_over_the_rate_with_its_numbers() -> None:
    gate = _mandate(max_live_violation_rate=0.05, min_live_calls=20)
    over = _decide(gate, _live(40, 3))
    assert (over.allow, over.reason) == (False, "live_violation_rate_above_maximum")
    assert over.numbers == {
        "live_calls": 40,
        "live_violations": 3,
        "live_check_failures": 0,
        "live_violation_rate": Decimal("0.075"),
        "max_live_violation_rate": Decimal("0.05"),
        "min_live_calls": 20,
        "window_days": 7,
        "since": "2026-11-25",
    }
    assert _decide(gate, _live(40, 2)).allow  # exactly at the maximum
    assert _decide(gate, _live(40, 0)).allow
    # A reference-free check's failures count against the agent as violations do.
    checked = LiveConformance(AGENT, CAPABILITY, "2026-11-25", 40, 1, 7, check_failures=2)
    assert _decide(gate, checked).reason == "live_violation_rate_above_maximum"
    assert checked.rate == Decimal("0.075")
    # Too few answers for a rate to say much: the gate waits for min_live_calls.
    assert _decide(gate, _live(19, 19)).allow
    assert not _decide(gate, _live(20, 19)).allow
    assert _decide(gate, _live(0, 0)).allow
    # Without the field the live numbers are never read.
    assert _decide(_mandate(), _live(40, 40)).allow
    assert not _mandate().needs_live and gate.needs_live


def test_the_default_minimum_is_a_hundred_answers() -> None:
    gate = _mandate(max_live_violation_rate=0)
    assert gate.min_live_calls == 100
    assert _decide(gate, _live(99, 1)).allow
    assert not _decide(gate, _live(100, 1)).allow


@pytest.mark.parametrize(
    "fields",
    [
        {"max_live_violation_rate": 1.5},
        {"max_live_violation_rate": -0.1},
        {"max_live_violation_rate": "0.1"},
        {"min_live_calls": 0},
        {"min_live_calls": 1.5},
    ],
)
def test_the_fields_are_checked(fields: dict[str, Any]) -> None:
    with pytest.raises(MandateError) as caught:
        _mandate(**fields)
    assert caught.value.location.path is not None
    assert next(iter(fields)) in caught.value.location.path


def test_the_openapi_reads_the_one_declaration_of_the_body() -> None:
    document = openapi(ENDPOINTS)
    for path in ("/v1/agents/{org}/{name}/invoke", "/v1/capabilities/{capability}/invoke"):
        schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        body = schema["schema"]
        assert list(body["properties"]) == list(INVOKE_KEYS)
        assert body["additionalProperties"] is False
    mandate = document["components"]["schemas"]["mandate"]["properties"]
    assert "description" in mandate["max_live_violation_rate"]
    assert "description" in mandate["min_live_calls"]


# -- the gate, through a real gateway --------------------------------------------


def _invoke(gw: Gateway, agent: str, value: Any) -> Any:
    return gw.call(
        "POST",
        f"/v1/agents/{agent}/invoke",
        CALLER,
        json={"capability": CAPABILITY, "input": value},
    )


def _settled(gw: Gateway) -> None:
    """Reading the ledger waits for this process's settlements to commit."""
    assert gw.call("GET", "/v1/ledger?limit=1", "operator").status_code == 200


@pytest.mark.slow
def test_a_mandate_denies_an_agent_over_its_live_violation_rate(
    store: Store, tmp_path: Path
) -> None:
    install_adder_suite(store, tmp_path)
    bad, good = Adder(answer=lambda _input: {"sum": "many"}), Adder()
    store.mandates.grant(
        adder_mandate(agents=["acme/*"], max_live_violation_rate=0.25, min_live_calls=4)
    )
    with (
        serving_adder(store, bad, "acme/bad"),
        serving_adder(store, good, "acme/good"),
        running_gateway(store, tmp_path / "home", eval_workers=0) as gw,
    ):
        statuses = []
        for n in range(4):
            statuses.append(_invoke(gw, "acme/bad", {"a": n, "b": 1}).status_code)
            _settled(gw)
        denied = _invoke(gw, "acme/bad", {"a": 9, "b": 1})
        # The good agent: 4 good answers, 1 bad (rate 0.2), and the caller's own bad inputs.
        for n in range(4):
            assert _invoke(gw, "acme/good", {"a": n, "b": 1}).status_code == 200
        good.answer = lambda _input: {"sum": None}
        assert _invoke(gw, "acme/good", {"a": 1, "b": 1}).status_code == 502
        good.answer = None
        for _ in range(5):
            assert _invoke(gw, "acme/good", {"a": "not a number"}).status_code == 400
        _settled(gw)
        allowed = _invoke(gw, "acme/good", {"a": 2, "b": 2})
        check = gw.call(
            "POST",
            "/v1/mandates/finance-adding/check",
            "operator",
            json={"agent": "acme/bad", "capability": CAPABILITY},
        )
        ledger = gw.call("GET", "/v1/ledger?agent=acme/bad", "operator").json()["items"]
    assert statuses == [502] * 4
    assert denied.status_code == 403, denied.text
    error = denied.json()["error"]
    assert error["code"] == "live_violation_rate_above_maximum"
    details = error["details"]
    assert (details["live_calls"], details["live_violations"]) == (4, 4)
    assert Decimal(str(details["live_violation_rate"])) == 1
    assert Decimal(str(details["max_live_violation_rate"])) == Decimal("0.25")
    assert (details["min_live_calls"], details["window_days"]) == (4, 7)
    assert len(bad.requests) == 4  # the denied call never reached it
    assert ledger[0]["reason"] == "live_violation_rate_above_maximum"
    assert allowed.status_code == 200, allowed.text
    assert check.status_code == 200, check.text
    assert check.json()["reason"] == "live_violation_rate_above_maximum"
    assert check.json()["live"]["violations"] == 4


def test_the_gate_compares_exactly_not_the_rounded_rate() -> None:
    """One violation in three million answers shows as rate 0 (six places), and still breaks
    a maximum of 0."""
    live = _live(3_000_000, 1)
    assert live.rate == 0
    assert not _decide(_mandate(max_live_violation_rate=0), live).allow
