"""`holon mandates check` answers what the live call answers, for every deny reason.

Each reason of `DENY_REASONS` (the one declaration) has a situation here;
a reason declared without one fails `test_every_deny_reason_has_a_situation`.
In each, the mandate's check (`LiveCalls.check`, the API's; the CLI's is
the same `check_mandate` on fresh lookups) is asked first, then the holder
makes the live call: the check's decision is `deny` with the live call's
error code as its reason, and the numbers the live call's error carries.
The world the mandates read (records, live conformance, identity probes) is
scripted through the lookups both read; budgets and rate limits are the
store's own, spent by real calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agents import Executor
from gateway.live import LiveCalls, Lookups
from gateway.mandates import DENY_REASONS
from records import AgentRecord, LiveConformance, Store
from schema.errors import Denied
from tests.gateway.server._gateway import mandate, register_triage
from tests.records._record import decided_record

AGENT = "acme/ticket-triage"
CAPABILITY = "ticket.classify"
INPUT = {"subject": "Refund please", "body": "I was charged twice."}
ROOT = Path(__file__).resolve().parents[3]


class World(Lookups):
    """The store's lookups, with what the mandates read about the agent scripted."""

    def __init__(self, store: Store) -> None:
        super().__init__(store, ttl_s=0)
        self.scripted_record: AgentRecord | None = None
        self.scripted_live: LiveConformance | None = None
        self.scripted_not_advertised: tuple[str, ...] = ()

    def record(self, agent_id: str, version: str) -> AgentRecord | None:
        return self.scripted_record

    def live(self, agent_id: str, capability: str) -> LiveConformance:
        return self.scripted_live or LiveConformance(agent_id, capability, "2026-11-29")

    def not_advertised(self, agent_id: str, version: str) -> tuple[str, ...]:
        return self.scripted_not_advertised

    def imported(
        self, agent_id: str, version: str, manifest: dict[str, Any], mandates: list[Any]
    ) -> list[AgentRecord]:
        return []


_record = decided_record


SITUATIONS: dict[str, tuple[dict[str, Any], Callable[[World], None] | None, int]] = {
    # reason: (the mandate's fields, what the world says, calls made first)
    "no_mandate": ({"revoke": True}, None, 0),
    "mandate_expired": ({"expires_at": "2020-01-01T00:00:00Z"}, None, 0),
    "capability_not_allowed": ({"capabilities": ["invoice.extract"]}, None, 0),
    "agent_not_allowed": ({"agents": ["other/*"]}, None, 0),
    "capability_not_advertised": (
        {},
        lambda w: setattr(w, "scripted_not_advertised", (CAPABILITY,)),
        0,
    ),
    "not_evaluated": ({"min_eval_score": 0.5}, None, 0),
    "issuer_not_accepted": (
        {"min_eval_score": 0.5, "accept_issuers": ["urn:holon:issuer:a"]},
        lambda w: setattr(w, "scripted_record", _record()),
        0,
    ),
    "unverified_capability": (
        {"min_capability_score": 0.5},
        lambda w: setattr(w, "scripted_record", _record(suites={})),
        0,
    ),
    "eval_stale": (
        {"min_eval_score": 0.5},
        lambda w: setattr(
            w,
            "scripted_record",
            _record(stale=True, stale_reasons=["identity probe: answered as 6.6.6"]),
        ),
        0,
    ),
    "drift_detected": (
        {"min_eval_score": 0.5},
        lambda w: setattr(
            w,
            "scripted_record",
            _record(canaries={CAPABILITY: {"drifted": True, "graded": 12, "passed": 2}}),
        ),
        0,
    ),
    "eval_score_below_minimum": (
        {"min_eval_score": 0.9},
        lambda w: setattr(w, "scripted_record", _record()),
        0,
    ),
    "eval_score_lower_below_minimum": (
        {"min_eval_score_lower": 0.8},
        lambda w: setattr(
            w,
            "scripted_record",
            _record(
                holdout_evals={"tiny": 3},
                suites={
                    "tiny": {
                        "capability": CAPABILITY,
                        "score": Decimal("0.85"),
                        "holdout": {"passed": 51, "total": 60, "rate": Decimal("0.85")},
                    }
                },
            ),
        ),
        0,
    ),
    "capability_score_below_minimum": (
        {"min_capability_score": 0.9},
        lambda w: setattr(w, "scripted_record", _record()),
        0,
    ),
    "overfit_warning": (
        {"deny_on_overfit": True},
        lambda w: setattr(
            w,
            "scripted_record",
            _record(warnings=[{"code": "overfit", "suite": "tiny", "detail": "gap"}]),
        ),
        0,
    ),
    "live_score_below_minimum": (
        {"min_live_score": 0.8, "min_canaries": 10},
        lambda w: setattr(
            w,
            "scripted_record",
            _record(canaries={CAPABILITY: {"drifted": False, "graded": 20, "passed": 10}}),
        ),
        0,
    ),
    "live_violation_rate_above_maximum": (
        {"max_live_violation_rate": 0.1, "min_live_calls": 1},
        lambda w: setattr(
            w,
            "scripted_live",
            LiveConformance(AGENT, CAPABILITY, "2026-11-29", calls=10, violations=5),
        ),
        0,
    ),
    "budget_too_small": ({"budget": {"amount_usd": "0.005", "period": "day"}}, None, 0),
    # One call of 0.0002 leaves 0.0098 of 0.01: not the 0.01 cap of the next.
    "budget_exhausted": ({"budget": {"amount_usd": "0.01", "period": "day"}}, None, 1),
    "rate_limited": ({"rate_limit": {"calls": 1, "per": "hour", "burst": 1}}, None, 1),
}

# Numbers that move with the clock between the check and the call.
MOVING = {"mandates", "retry_after_s", "retry_at"}


def test_every_deny_reason_has_a_situation() -> None:
    assert list(SITUATIONS) == list(DENY_REASONS)


@pytest.mark.anyio
@pytest.mark.parametrize("reason", DENY_REASONS)
async def test_the_check_denies_as_the_live_call_does(store: Store, reason: str) -> None:
    fields, script, calls_first = SITUATIONS[reason]
    register_triage(store)
    fields = dict(fields)
    revoke = fields.pop("revoke", False)
    store.mandates.grant(mandate(**fields))
    if revoke:
        store.mandates.revoke("finance-tickets")
    world = World(store)
    if script is not None:
        script(world)
    async with Executor() as executor:
        calls = LiveCalls(store, executor, lookups=world)
        for _ in range(calls_first):
            await calls.invoke("finance-bot", AGENT, CAPABILITY, INPUT)
        rows = len(store.ledger.list().items)
        check = calls.check("finance-tickets", AGENT, CAPABILITY)
        assert len(store.ledger.list().items) == rows  # a dry run writes nothing
        with pytest.raises(Denied) as caught:
            await calls.invoke("finance-bot", AGENT, CAPABILITY, INPUT)
    error = caught.value
    assert error.code == reason
    assert (check["decision"], check["reason"], check["mandate"]) == (
        "deny",
        error.code,
        "finance-tickets",
    )
    for key, value in error.details.items():
        if key in MOVING:
            continue
        if isinstance(value, dict):  # the check's `rate_limit` adds what is `available`
            assert check[key] == {**check[key], **value}, key
        else:
            assert check[key] == value, key
    if revoke:
        assert check["revoked_at"]


@pytest.mark.anyio
async def test_the_check_allows_what_the_live_call_allows(store: Store) -> None:
    register_triage(store)
    store.mandates.grant(
        mandate(
            budget={"amount_usd": "0.02", "period": "day"},
            rate_limit={"calls": 1, "per": "hour", "burst": 2},
        )
    )
    async with Executor() as executor:
        calls = LiveCalls(store, executor, lookups=World(store))
        check = calls.check("finance-tickets", AGENT, CAPABILITY)
        assert check["decision"] == "allow"
        assert check["budget"]["spent_usd"] == "0" and check["rate_limit"]["available"] == 2
        answer = await calls.invoke("finance-bot", AGENT, CAPABILITY, INPUT)
        assert answer["mandate"] == "finance-tickets"
        after = calls.check("finance-tickets", AGENT, CAPABILITY)
    assert after["decision"] == "allow" and after["rate_limit"]["available"] == 1


def test_the_docs_list_every_deny_reason_in_order() -> None:
    """docs/gateway.md's list of deny reasons is `DENY_REASONS`, in the order checked."""
    page = (ROOT / "docs" / "gateway.md").read_text()
    start = page.index("Deny reasons, in the order they are checked")
    paragraph = page[start : page.index("\n\n", start)]
    listed = re.findall(r"`([a-z_]+)`(?: \([^)]*\))?[,.]", paragraph)
    assert listed == list(DENY_REASONS)
