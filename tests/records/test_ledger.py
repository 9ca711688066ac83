"""The ledger and budgets: reserve before the call, settle after, never overspend."""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from records import BudgetState, CallEntry, LedgerEntry, Store, period_key, utcnow
from schema.errors import NotFound


def _call(caller: str = "bot") -> CallEntry:
    return CallEntry(str(uuid.uuid4()), caller, "ticket.classify", "acme/t", "1.0.0")


def _reserve(
    store: Store, cap: str = "0.01", budget: str | None = "0.10", expires_in_s: float = 60
) -> LedgerEntry | BudgetState:
    return store.ledger.reserve(
        _call(),
        mandate_id="m1",
        cap=Decimal(cap),
        expires_at=utcnow() + timedelta(seconds=expires_in_s),
        budget=None if budget is None else ("month", Decimal(budget)),
        details={},
    )


def _period() -> str:
    return period_key("month", utcnow())


def test_period_keys() -> None:
    when = datetime(2026, 11, 29, 23, 59, tzinfo=UTC)
    assert period_key("day", when) == "2026-11-29"
    assert period_key("week", when) == "2026-W48"
    assert period_key("month", when) == "2026-11"
    assert period_key("year", when) == "2026"


def test_reserve_then_settle_charges_at_most_the_cap(store: Store) -> None:
    entry = _reserve(store)
    assert isinstance(entry, LedgerEntry) and entry.status == "reserved"
    assert store.ledger.budget("m1", _period()) == (Decimal(0), Decimal("0.01"))
    settled = store.ledger.settle(
        entry.id, outcome_code="ok", cost=Decimal("0.5"), cost_source="priced", latency_ms=3.0
    )
    assert settled.status == "settled" and settled.cost_usd == Decimal("0.01")
    assert store.ledger.budget("m1", _period()) == (Decimal("0.01"), Decimal(0))
    again = store.ledger.settle(
        entry.id, outcome_code="ok", cost=Decimal("0.5"), cost_source="priced", latency_ms=3.0
    )
    assert again == settled  # idempotent
    assert store.ledger.budget("m1", _period()) == (Decimal("0.01"), Decimal(0))


def test_a_cheaper_call_releases_the_rest_of_its_reservation(store: Store) -> None:
    entry = _reserve(store)
    assert isinstance(entry, LedgerEntry)
    store.ledger.settle(
        entry.id,
        outcome_code="ok",
        cost=Decimal("0.0031"),
        cost_source="priced",
        latency_ms=1.0,
    )
    assert store.ledger.budget("m1", _period()) == (Decimal("0.0031"), Decimal(0))


def test_an_exhausted_budget_refuses_and_writes_nothing(store: Store) -> None:
    for _ in range(10):
        assert isinstance(_reserve(store), LedgerEntry)
    refused = _reserve(store)
    assert isinstance(refused, BudgetState) and refused.exhausted
    assert refused.reserved == Decimal("0.10") and refused.amount == Decimal("0.10")
    assert Decimal(refused.to_json()["remaining_usd"]) == 0
    assert len(store.ledger.list(limit=100).items) == 10


def test_a_crashed_reservation_expires_charged_in_full(store: Store) -> None:
    for _ in range(10):
        _reserve(store, expires_in_s=-1)  # already past its deadline: a crashed process
    # The agent may have been called (and its answer sent): the holds still count.
    refused = _reserve(store)
    assert isinstance(refused, BudgetState) and refused.exhausted
    assert store.ledger.expire() == 10
    rows = store.ledger.list(limit=100).items
    assert [(r.status, r.cost_usd, r.cost_source, r.reason) for r in rows] == [
        ("expired", Decimal("0.01"), "reserved", "agent_may_have_been_called")
    ] * 10
    assert store.ledger.budget("m1", _period()) == (Decimal("0.10"), Decimal(0))
    assert isinstance(_reserve(store), BudgetState)  # expiring freed nothing
    assert store.ledger.expire() == 0


def test_settling_after_expiry_corrects_the_charge(store: Store) -> None:
    late = _reserve(store, expires_in_s=-1)
    assert isinstance(late, LedgerEntry)
    assert store.ledger.expire() == 1
    assert store.ledger.budget("m1", _period()) == (Decimal("0.01"), Decimal(0))
    settled = store.ledger.settle(
        late.id, outcome_code="ok", cost=Decimal("0.004"), cost_source="priced", latency_ms=1.0
    )
    assert settled.status == "settled" and settled.cost_usd == Decimal("0.004")
    assert store.ledger.budget("m1", _period()) == (Decimal("0.004"), Decimal(0))


def test_only_reservations_past_their_deadline_expire(store: Store) -> None:
    kept = _reserve(store, budget="0.05")
    stale = _reserve(store, budget="0.05", expires_in_s=-1)
    assert isinstance(kept, LedgerEntry) and isinstance(stale, LedgerEntry)
    assert store.ledger.expire(now=utcnow()) == 1
    assert store.ledger.get(kept.request_id).status == "reserved"
    assert store.ledger.budget("m1", _period()) == (Decimal("0.01"), Decimal("0.01"))


def test_no_budget_still_reserves_a_row(store: Store) -> None:
    entry = _reserve(store, budget=None)
    assert isinstance(entry, LedgerEntry) and entry.period is None
    assert store.ledger.get(entry.request_id).status == "reserved"


def test_denials_are_recorded(store: Store) -> None:
    denied = store.ledger.deny(
        _call(), mandate_id=None, reason="no_mandate", details={"mandates": []}
    )
    assert denied.decision == "deny" and denied.status == "denied"
    assert store.ledger.list(decision="deny").items == [denied]
    assert store.ledger.list(decision="allow").items == []


def test_listing_pages_newest_first_and_filters(store: Store) -> None:
    for caller in ("a", "b", "a", "a"):
        store.ledger.deny(_call(caller), mandate_id=None, reason="no_mandate", details={})
    first = store.ledger.list(caller="a", limit=2)
    assert len(first.items) == 2 and first.next_cursor is not None
    rest = store.ledger.list(caller="a", limit=2, cursor=first.next_cursor)
    assert len(rest.items) == 1 and rest.next_cursor is None
    ids = [e.id for e in first.items + rest.items]
    assert ids == sorted(ids, reverse=True)
    with pytest.raises(NotFound):
        store.ledger.get("nope")


def test_fifty_concurrent_reservations_against_ten(store: Store) -> None:
    """Threads (each its own connection) race for a budget that affords ten calls."""

    def attempt(_: int) -> bool:
        return isinstance(_reserve(store), LedgerEntry)

    with ThreadPoolExecutor(max_workers=16) as pool:
        won = sum(pool.map(attempt, range(50)))
    assert won == 10
    assert store.ledger.budget("m1", _period()) == (Decimal(0), Decimal("0.10"))
