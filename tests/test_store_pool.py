"""The tests' PostgreSQL databases are reused only when nothing a test did can show
through (tests/conftest.py, `_Pool`): a test never sees another test's rows, and a
database whose schema a test changed, or that something still holds, is dropped, not
handed on."""

from __future__ import annotations

import contextlib

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from tests.conftest import _Pool

pytestmark = pytest.mark.postgres


def _run(url: str, *statements: str) -> list[object]:
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.begin() as conn:
            results = [conn.execute(text(s)) for s in statements]
            return [r.scalar() for r in results if r.returns_rows]
    finally:
        engine.dispose()


def test_a_reused_database_is_empty_and_a_changed_one_is_not_reused(
    postgres_admin_url: str, _postgres_template: str
) -> None:
    pool = _Pool(postgres_admin_url, _postgres_template)
    try:
        first = pool.acquire()
        url = pool.url(first)
        seeded = _run(url, "SELECT count(*) FROM alembic_version")
        _run(
            url,
            "INSERT INTO store_secrets (name, value, created_at) VALUES ('x', 'y', now())",
            "SELECT count(*) FROM store_secrets",
        )
        pool.release(first)
        assert len(pool._free) == 1
        again = pool.acquire()
        # The same database under another name: whatever still holds the old URL (a
        # thread, a process an earlier test left) cannot reach the next test's rows.
        assert again != first
        with pytest.raises(OperationalError, match="does not exist"):
            _run(url, "SELECT 1")
        assert _run(pool.url(again), "SELECT count(*) FROM store_secrets") == [0]
        # The rows the migrations wrote are kept.
        assert _run(pool.url(again), "SELECT count(*) FROM alembic_version") == seeded
        assert _run(pool.url(again), "SHOW synchronous_commit") == ["off"]
        # A test that changed the schema's shape: its database goes.
        _run(pool.url(again), "ALTER TABLE store_secrets ADD COLUMN extra text")
        pool.release(again)
        assert pool._free == []
        # So does one whose seeded rows changed (a release ahead, a downgrade).
        other = pool.acquire()
        _run(pool.url(other), "UPDATE alembic_version SET version_num = 'elsewhere'")
        pool.release(other)
        assert pool._free == []
        # One something is still connected to is not handed on: it is dropped.
        held = pool.acquire()
        engine = create_engine(pool.url(held), poolclass=NullPool)
        conn = engine.connect()
        try:
            conn.execute(text("SELECT 1"))
            conn.commit()
            pool.release(held)
            assert pool._free == []
        finally:
            # The drop (WITH FORCE, in the dropper's thread) ends this session, perhaps
            # before it closes here.
            with contextlib.suppress(OperationalError):
                conn.close()
            engine.dispose()
    finally:
        pool.close()
