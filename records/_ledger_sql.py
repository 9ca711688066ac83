"""The ledger's write statements at the driver level (sqlite3, psycopg), in one transaction.

Every live call commits a reservation before its agent is called: four
statements in one transaction. Through SQLAlchemy's execution machinery
(the Session, events, the compiled cache, result objects) each statement
costs about 0.1 ms of Python, six times what SQLite itself takes, on the
critical path of every call. Here they go straight to the DBAPI cursor.

What is stored stays exactly what the ORM stores and reads: every value
goes through its column type's own bind and result processors (the public
`TypeEngine.dialect_impl(...).bind_processor(...)`), so timestamps, JSON and
Decimal text look the same whichever path wrote them. The SQL is written
once for both databases; only the parameter style and `FOR UPDATE` (SQLite
has none: its write transaction holds the database lock) differ.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import JSON, Engine, Table
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from records._ledger_values import EXPIRED_COST_SOURCE, EXPIRED_REASON
from records._models import BudgetRow, LedgerRow
from records._rate import EPOCH
from records._types import UTCDateTime

log = logging.getLogger(__name__)

__all__ = ["Busy", "LedgerSql"]

LEDGER = cast(Table, LedgerRow.__table__)
BUDGETS = cast(Table, BudgetRow.__table__)

Processor = Callable[[Any], Any]


class Busy(Exception):
    """SQLite's write lock stayed taken for the whole bounded wait; nothing was written."""


class LedgerSql:
    """The statements, in the engine's dialect; each method runs on an open cursor."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        dialect = engine.dialect
        self.postgres = dialect.name == "postgresql"
        self._errors: type[Exception] = dialect.loaded_dbapi.Error
        self._checkpoints = _Checkpoints(engine, self._errors)
        self._operational: type[BaseException] = dialect.loaded_dbapi.OperationalError
        lock = " FOR UPDATE" if self.postgres else ""
        self._bind: dict[str, Processor | None] = {}
        self._result: dict[str, Processor | None] = {}
        for column in [*LEDGER.c, *BUDGETS.c]:
            impl = column.type.dialect_impl(dialect)
            self._bind.setdefault(column.name, impl.bind_processor(dialect))
            # Text and numbers come back from both drivers as they are; timestamps
            # (UTC made aware) and JSON (SQLite: text) need their column's reading.
            converts = isinstance(column.type, (UTCDateTime, JSON))
            self._result.setdefault(
                column.name, impl.result_processor(dialect, None) if converts else None
            )
        self._bind["now"] = self._bind["expires_at"]  # compared with it
        self.columns = [c.name for c in LEDGER.c]

        sql = self._sql
        self._select_budget = sql(
            "SELECT spent_usd, reserved_usd FROM budgets"
            " WHERE mandate_id = :mandate_id AND period = :period" + lock
        )
        self._create_budget = sql(
            "INSERT INTO budgets (mandate_id, period, spent_usd, reserved_usd, updated_at)"
            " VALUES (:mandate_id, :period, '0', '0', :updated_at)"
            " ON CONFLICT (mandate_id, period) DO NOTHING"
        )
        # The store's clock comes with the bucket's lock (PostgreSQL; records._rate):
        # gateway processes on several hosts refill by one clock, at no extra round trip.
        clock = "statement_timestamp()" if self.postgres else "NULL"
        self._select_bucket = sql(
            f"SELECT level, updated_at, {clock} FROM rate_buckets"
            " WHERE mandate_id = :mandate_id" + lock
        )
        self._create_bucket = sql(
            "INSERT INTO rate_buckets (mandate_id, level, updated_at)"
            " VALUES (:mandate_id, 0, :updated_at) ON CONFLICT (mandate_id) DO NOTHING"
        )
        self._update_bucket = sql(
            "UPDATE rate_buckets SET level = :level, updated_at = :updated_at"
            " WHERE mandate_id = :mandate_id"
        )
        self._update_budget = sql(
            "UPDATE budgets SET spent_usd = :spent_usd, reserved_usd = :reserved_usd,"
            " updated_at = :updated_at WHERE mandate_id = :mandate_id AND period = :period"
        )
        names = ", ".join(self.columns)
        self._insert = sql(
            f"INSERT INTO ledger ({names}) VALUES ({', '.join(':' + c for c in self.columns)})"
        )
        self._select_rows = f"SELECT {names} FROM ledger WHERE id IN ({{ids}}) ORDER BY id{lock}"
        self._select_stale = sql(
            "SELECT id, mandate_id, period, reserved_usd FROM ledger"
            " WHERE status = 'reserved' AND expires_at < :now" + lock
        )
        self._expire_rows = (
            "UPDATE ledger SET status = 'expired', cost_usd = reserved_usd,"
            f" cost_source = '{EXPIRED_COST_SOURCE}', reason = '{EXPIRED_REASON}'"
            " WHERE id IN ({ids})"
        )
        self._settle = sql(
            "UPDATE ledger SET status = 'settled', cost_usd = :cost_usd,"
            " cost_source = :cost_source, outcome_code = :outcome_code,"
            " latency_ms = :latency_ms, settled_at = :settled_at WHERE id = :id"
        )

    def _sql(self, text: str) -> str:
        """`:name` parameters in the driver's style (sqlite3 takes them as they are)."""
        if not self.postgres:
            return text
        out, i = [], 0
        while i < len(text):
            end = i + 1
            if text[i] == ":":
                while end < len(text) and (text[end].isalnum() or text[end] == "_"):
                    end += 1
            out.append(f"%({text[i + 1 : end]})s" if end > i + 1 else text[i])
            i = end
        return "".join(out)

    def _in(self, template: str, ids: Sequence[str]) -> tuple[str, dict[str, str]]:
        params = {f"i{n}": value for n, value in enumerate(ids)}
        return template.format(ids=", ".join(self._sql(":" + k) for k in params)), params

    def _params(self, values: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for name, value in values.items():
            processor = self._bind.get(name)
            out[name] = processor(value) if processor is not None and value is not None else value
        return out

    # -- the transaction -------------------------------------------------------

    @contextmanager
    def transaction(self, wait_s: float | None = None) -> Iterator[Any]:
        """A cursor in one write transaction, committed when the block ends.

        `wait_s` (SQLite) bounds the wait for another writer's lock: `Busy`
        if it stays taken. A driver error leaves nothing written and comes
        out as SQLAlchemy's wrapped error (callers map it, as for ORM work).
        """
        try:
            pooled = self._engine.raw_connection()
        except self._errors as exc:  # the pool connects with the driver's own errors
            raise DBAPIError.instance(None, None, exc, self._errors) from exc
        try:
            connection: Any = pooled.driver_connection
            cursor = connection.cursor()
            try:
                if self.postgres:
                    yield cursor
                    connection.commit()
                else:
                    yield from self._sqlite_transaction(cursor, wait_s)
            except BaseException:
                try:
                    connection.rollback()
                except self._errors:  # a broken connection: the pool discards it
                    pass
                raise
            finally:
                cursor.close()
        except self._errors as exc:
            raise DBAPIError.instance(None, None, exc, self._errors) from exc
        finally:
            pooled.close()

    def _sqlite_transaction(self, cursor: Any, wait_s: float | None) -> Iterator[Any]:
        if wait_s is not None:
            # A caller on an event loop: a bounded wait for the lock, and no WAL
            # checkpoint in its commit (SQLite runs one in the commit that fills
            # the WAL past 1,000 pages: a copy and an fsync, 5-30 ms here, that
            # would stop the loop); `_checkpoints` runs them in a thread instead.
            cursor.execute(f"PRAGMA busy_timeout = {max(0, int(wait_s * 1000))}")
            cursor.execute("PRAGMA wal_autocheckpoint = 0")
        # This process's ledger writers give way to a checkpoint's RESTART (see
        # _Checkpoints), which SQLite's busy handler alone would starve.
        turn = self._checkpoints.turn
        if not self._checkpoints.take_turn(wait_s):
            raise Busy()
        try:
            try:
                cursor.execute("BEGIN IMMEDIATE")
            except self._operational as exc:
                if wait_s is not None and "locked" in str(exc):
                    raise Busy() from None
                raise
            yield cursor
            cursor.execute("COMMIT")
        finally:
            turn.release()
            if wait_s is not None:
                # The store's own settings (records._store, SQLite's default).
                cursor.execute("PRAGMA busy_timeout = 30000")
                cursor.execute("PRAGMA wal_autocheckpoint = 1000")
        if wait_s is not None:
            self._checkpoints.committed()

    # -- statements ------------------------------------------------------------

    def budget(self, cursor: Any, mandate_id: str, period: str) -> tuple[Decimal, Decimal] | None:
        """(spent, reserved) of a budget row, locked; None if there is none."""
        cursor.execute(self._select_budget, {"mandate_id": mandate_id, "period": period})
        row = cursor.fetchone()
        return None if row is None else (Decimal(row[0]), Decimal(row[1]))

    def create_budget(self, cursor: Any, mandate_id: str, period: str, now: datetime) -> None:
        values = {"mandate_id": mandate_id, "period": period, "updated_at": now}
        cursor.execute(self._create_budget, self._params(values))

    def update_budgets(self, cursor: Any, rows: Sequence[Mapping[str, Any]]) -> None:
        cursor.executemany(self._update_budget, [self._params(r) for r in rows])

    def bucket(self, cursor: Any, mandate_id: str) -> tuple[int, datetime, datetime | None] | None:
        """(level, updated_at, the store's time or None) of a rate bucket, locked; None if
        there is none."""
        cursor.execute(self._select_bucket, {"mandate_id": mandate_id})
        row = cursor.fetchone()
        if row is None:
            return None
        read = self._result["updated_at"]
        assert read is not None
        clock = None if row[2] is None else read(row[2])
        return int(row[0]), read(row[1]), clock

    def create_bucket(self, cursor: Any, mandate_id: str) -> None:
        """An empty bucket at the epoch (its first refill fills it), unless one exists."""
        values = {"mandate_id": mandate_id, "updated_at": EPOCH}
        cursor.execute(self._create_bucket, self._params(values))

    def update_buckets(self, cursor: Any, rows: Sequence[Mapping[str, Any]]) -> None:
        cursor.executemany(self._update_bucket, [self._params(r) for r in rows])

    def insert(self, cursor: Any, rows: Sequence[Mapping[str, Any]]) -> None:
        cursor.executemany(self._insert, [self._params(r) for r in rows])

    def rows(self, cursor: Any, ids: Sequence[str]) -> list[dict[str, Any]]:
        """Whole ledger rows by id, locked, as the ORM would read them."""
        query, params = self._in(self._select_rows, ids)
        cursor.execute(query, params)
        result = self._result
        return [
            {
                name: value if (convert := result[name]) is None else convert(value)
                for name, value in zip(self.columns, row, strict=True)
            }
            for row in cursor.fetchall()
        ]

    def stale(self, cursor: Any, now: datetime) -> list[tuple[str, str | None, str | None, str]]:
        """(id, mandate, period, reserved) of every reservation past its deadline, locked."""
        cursor.execute(self._select_stale, self._params({"now": now}))
        return [tuple(row) for row in cursor.fetchall()]

    def expire(self, cursor: Any, ids: Sequence[str]) -> None:
        query, params = self._in(self._expire_rows, ids)
        cursor.execute(query, params)

    def settle(self, cursor: Any, updates: Sequence[Mapping[str, Any]]) -> None:
        cursor.executemany(self._settle, [self._params(u) for u in updates])


class _Checkpoints:
    """WAL checkpoints in a thread, for commits made without one.

    One runs after every `EVERY` loop commits, never two at once. PASSIVE
    first copies the bulk without holding anyone up (the thread lets go of
    the GIL while SQLite copies and syncs). RESTART then copies what was
    written since and lets the next writer start the WAL over: with steady
    writes PASSIVE alone never catches up, and the WAL grows without bound.
    RESTART needs a moment with no writer; SQLite's busy handler polls for
    one and, against a loop that commits every few hundred microseconds,
    may not find it for a long time, so this process's ledger writers wait
    for `turn` while it runs (the loop's for its bounded wait, then the
    batch goes to the thread). Its own wait for other processes' writers
    and for readers is bounded by `RESTART_WAIT_MS`; a RESTART that runs
    out of time is tried again at the next round.

    A RESTART that wants the turn says so first (`_clear` unset), and no
    writer takes the turn again until it has had it: a lock is not fair, and
    a writer that commits in a tight loop would take it back each time it let
    go, before the checkpoint's thread was even scheduled (the WAL then grew
    to 44 MB in 1,500 commits in tests/records/test_ledger_sql.py).
    """

    EVERY = 300
    RESTART_WAIT_MS = 100

    def __init__(self, engine: Engine, errors: type[Exception]) -> None:
        self._engine = engine
        self._errors = errors
        self.turn = threading.Lock()
        self._clear = threading.Event()  # unset while a RESTART waits for, or holds, the turn
        self._clear.set()
        self._lock = threading.Lock()
        self._commits = 0
        self._running = False

    def take_turn(self, wait_s: float | None) -> bool:
        """Take the writers' turn (after any RESTART that asked for it), waiting at most
        `wait_s` (None: as long as it takes); whether it was taken."""
        if wait_s is None:
            self._clear.wait()
            return self.turn.acquire()
        deadline = time.monotonic() + wait_s
        if not self._clear.wait(wait_s):
            return False
        return self.turn.acquire(timeout=max(0.0, deadline - time.monotonic()))

    def committed(self) -> None:
        with self._lock:
            self._commits += 1
            if self._commits < self.EVERY or self._running:
                return
            self._commits, self._running = 0, True
        threading.Thread(target=self._run, name="holon-checkpoint", daemon=True).start()

    def _run(self) -> None:
        try:
            pooled = self._engine.raw_connection()
            try:
                raw: Any = pooled.driver_connection
                raw.execute("PRAGMA wal_checkpoint(PASSIVE)")
                raw.execute(f"PRAGMA busy_timeout = {self.RESTART_WAIT_MS}")
                self._clear.clear()
                try:
                    with self.turn:
                        raw.execute("PRAGMA wal_checkpoint(RESTART)")
                finally:
                    self._clear.set()
                    raw.execute("PRAGMA busy_timeout = 30000")
            finally:
                pooled.close()
        except (self._errors, SQLAlchemyError) as exc:  # the next one tries again
            log.warning("a WAL checkpoint failed: %s", exc)
        finally:
            with self._lock:
                self._running = False
