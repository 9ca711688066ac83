"""The ledger's driver-level writes: stored as the ORM stores them, failures as store
failures, and the WAL kept in bounds when commits skip their checkpoints."""

from __future__ import annotations

import uuid
from datetime import UTC, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import create_engine, select, text
from sqlalchemy.engine import make_url

from records import CallEntry, LedgerEntry, Reserve, Settle, Store, open_store, utcnow
from records._models import LedgerRow
from schema.errors import StoreUnavailable


def _reserve(mandate: str = "m-sql") -> Reserve:
    return Reserve(
        CallEntry(str(uuid.uuid4()), "bot", "ticket.classify", "acme/t", "1.0.0"),
        mandate_id=mandate,
        cap=Decimal("0.01"),
        expires_at=utcnow() + timedelta(seconds=60),
        budget=("month", Decimal("1000")),
        details={"decision": {"mandate": mandate, "allow": True}, "note": "ünïcode"},
    )


def test_rows_read_back_through_the_orm_as_written(store: Store) -> None:
    (entry,) = store.ledger.apply([_reserve()]) or []
    assert isinstance(entry, LedgerEntry)
    (settled,) = store.ledger.apply([Settle(entry.id, "ok", Decimal("0.004"), "priced", 2.5)]) or []
    with store.read() as session:
        row = session.execute(select(LedgerRow).where(LedgerRow.id == entry.id)).scalar_one()
    assert row.details == {"decision": {"mandate": "m-sql", "allow": True}, "note": "ünïcode"}
    assert row.created_at == entry.created_at and row.created_at.tzinfo is not None
    assert row.expires_at is not None and row.expires_at.utcoffset() == timedelta(0)
    assert row.settled_at == settled.settled_at
    assert (row.status, row.cost_usd, row.latency_ms) == ("settled", "0.004", 2.5)
    assert settled.created_at.tzinfo == UTC


def test_an_unwritable_store_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    open_store(f"sqlite:///{path}", auto_upgrade=True).close()
    # Read-only at the driver (chmod would not stop root, who runs CI).
    store = open_store(f"sqlite:///file:{path}?mode=ro&uri=true")
    try:
        with pytest.raises(StoreUnavailable, match="readonly"):
            store.ledger.apply([_reserve()])
        with pytest.raises(StoreUnavailable):
            store.ledger.apply([_reserve()], wait_s=0.002)
    finally:
        store.close()


@pytest.mark.postgres
def test_a_vanished_database_is_unavailable(postgres_url: str, postgres_admin_url: str) -> None:
    store = open_store(postgres_url, auto_upgrade=True)
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    try:
        assert isinstance((store.ledger.apply([_reserve()]) or [None])[0], LedgerEntry)
        name = make_url(postgres_url).database
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        with pytest.raises(StoreUnavailable):
            store.ledger.apply([_reserve()])
    finally:
        admin.dispose()
        store.close()


def test_the_wal_stays_bounded_under_loop_commits(tmp_path: Path) -> None:
    """Commits with a bounded wait skip SQLite's checkpoint; the thread's checkpoints
    must still let the WAL start over, or it would grow with every write."""
    url = f"sqlite:///{tmp_path / 'wal.db'}"
    store = open_store(url, auto_upgrade=True)
    try:
        for _ in range(1500):
            result = store.ledger.apply([_reserve()], wait_s=0.002)
            if result is None:  # a checkpoint held the lock: as the gateway, via the thread
                store.ledger.apply([_reserve()])
        wal = tmp_path / "wal.db-wal"
        # 1,500 transactions of about 6 pages each is ~36 MB of WAL if nothing
        # checkpoints; restarted every 300 commits it stays a few MB.
        assert wal.stat().st_size < 16 * 1024 * 1024, wal.stat().st_size
    finally:
        store.close()
