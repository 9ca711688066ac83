"""The event loop's ledger writer: one transaction a loop turn, bounded lock waits,
nothing held for a caller that left, settlements after the answer that land."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
import uuid
from datetime import timedelta
from decimal import Decimal

import pytest

from gateway.live._writes import INLINE_LOCK_WAIT_S, LedgerWriter
from records import (
    BudgetState,
    CallEntry,
    LedgerEntry,
    Reserve,
    Settle,
    Store,
    period_key,
    utcnow,
)
from schema.errors import NotFound

MANDATE = "m-writer"


def _reserve(cap: str = "0.01", budget: str = "1.00") -> Reserve:
    return Reserve(
        CallEntry(str(uuid.uuid4()), "bot", "ticket.classify", "acme/t", "1.0.0"),
        mandate_id=MANDATE,
        cap=Decimal(cap),
        expires_at=utcnow() + timedelta(seconds=60),
        budget=("month", Decimal(budget)),
        details={},
    )


def _budget(store: Store) -> tuple[Decimal, Decimal]:
    return store.ledger.budget(MANDATE, period_key("month", utcnow()))


@pytest.mark.anyio
async def test_the_writes_of_one_loop_turn_share_one_transaction(store: Store) -> None:
    writer = LedgerWriter(store)
    futures = [writer.write(_reserve()) for _ in range(20)]
    entries = await asyncio.gather(*futures)
    assert all(isinstance(e, LedgerEntry) and e.status == "reserved" for e in entries)
    # One transaction stamps all of its rows with one time.
    transactions = {e.created_at for e in store.ledger.list().items}
    if store.dialect == "sqlite":
        assert len(transactions) == 1
    else:  # the group-commit thread takes what has queued by the time it is free
        assert 1 <= len(transactions) <= 20
    assert _budget(store) == (Decimal(0), Decimal("0.20"))
    settled = await asyncio.gather(
        *(writer.write(Settle(e.id, "ok", Decimal("0.004"), "priced", 1.0)) for e in entries)
    )
    assert {s.cost_usd for s in settled} == {Decimal("0.004")}
    assert _budget(store) == (Decimal("0.080"), Decimal(0))


@pytest.mark.anyio
async def test_a_budget_refusal_comes_back_as_its_state(store: Store) -> None:
    writer = LedgerWriter(store)
    results = await asyncio.gather(*(writer.write(_reserve(budget="0.03")) for _ in range(5)))
    allowed = [r for r in results if isinstance(r, LedgerEntry)]
    refused = [r for r in results if isinstance(r, BudgetState)]
    assert len(allowed) == 3 and len(refused) == 2
    assert refused[0].exhausted and refused[0].reserved == Decimal("0.03")


@pytest.mark.anyio
async def test_one_bad_write_fails_alone(store: Store) -> None:
    writer = LedgerWriter(store)
    good = writer.write(_reserve())
    bad = writer.write(Settle("led_missing", "ok", Decimal(0), "none", 0.0))
    assert isinstance(await good, LedgerEntry)
    with pytest.raises(NotFound):
        await bad


@pytest.mark.anyio
async def test_a_duplicate_request_id_fails_alone_through_the_thread(store: Store) -> None:
    writer = LedgerWriter(store)
    first = _reserve()
    assert isinstance(await writer.write(first), LedgerEntry)
    again = writer.write(first)  # the same request id: the batch's transaction fails
    other = writer.write(_reserve())
    assert isinstance(await other, LedgerEntry)  # applied again on its own
    with pytest.raises(Exception, match="(?i)unique|duplicate"):
        await again


@pytest.mark.anyio
async def test_a_busy_sqlite_lock_sends_the_batch_to_the_thread(
    store: Store, store_url: str
) -> None:
    if store.dialect != "sqlite":
        pytest.skip("SQLite's write lock")
    other = sqlite3.connect(store_url.removeprefix("sqlite:///"), isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's writer holds the lock
    writer = LedgerWriter(store)
    loop = asyncio.get_running_loop()
    try:
        future = writer.write(_reserve())
        started = time.perf_counter()
        await asyncio.sleep(0)  # the flush runs, finds the lock taken, hands over
        stalled = time.perf_counter() - started
        loop.call_later(0.3, other.execute, "COMMIT")
        entry = await asyncio.wait_for(future, 10)
    finally:
        other.close()
    assert isinstance(entry, LedgerEntry)
    # The loop stood still for the bounded wait, not for the 0.3 s the lock was held.
    assert stalled < INLINE_LOCK_WAIT_S + 0.1


@pytest.mark.anyio
async def test_a_caller_that_leaves_holds_nothing(store: Store) -> None:
    writer = LedgerWriter(store)
    # Cancelled while queued: never applied.
    queued = asyncio.ensure_future(writer.reserve(_reserve()))
    await asyncio.sleep(0)  # the task starts and queues its write
    assert store.ledger.list().items == []
    queued.cancel()
    with pytest.raises(asyncio.CancelledError):
        await queued
    # Cancelled after its commit, before it saw the result: released.
    committed = asyncio.ensure_future(writer.reserve(_reserve()))
    await asyncio.sleep(0)
    await asyncio.sleep(0)  # the flush commits; the task has not resumed yet
    if store.dialect == "sqlite":  # on PostgreSQL the thread may not have committed yet
        assert [r.status for r in store.ledger.list().items] == ["reserved"]
    committed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await committed
    await writer.drain()
    rows = store.ledger.list().items
    assert all(r.status != "reserved" for r in rows)
    assert _budget(store)[1] == Decimal(0)


@pytest.mark.anyio
async def test_a_failed_settlement_after_the_answer_is_logged(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    writer = LedgerWriter(store)
    with caplog.at_level(logging.ERROR, logger="gateway.live._writes"):
        writer.later(Settle("led_missing", "ok", Decimal(0), "none", 0.0))
        await writer.drain()
    assert "its reservation expires" in caplog.text


@pytest.mark.anyio
async def test_settlements_after_the_answer_land_before_the_store_closes(
    store_url: str,
) -> None:
    from records import open_store

    store = open_store(store_url, auto_upgrade=True)
    writer = LedgerWriter(store, inline=False)  # through the thread, as on PostgreSQL
    entry = await writer.write(_reserve())
    assert isinstance(entry, LedgerEntry)
    writer.later(Settle(entry.id, "ok", Decimal("0.002"), "priced", 1.0))
    await asyncio.sleep(0)  # flushed to the thread; nobody waits for it
    store.close()  # drains the group commit first
    reopened = open_store(store_url)
    try:
        (row,) = [r for r in reopened.ledger.list().items if r.id == entry.id]
        assert row.status == "settled" and row.cost_usd == Decimal("0.002")
    finally:
        reopened.close()
