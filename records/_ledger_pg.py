"""The ledger's writes on PostgreSQL from an event loop: one statement a group, no thread.

A group of writes (`Reserve`, `Settle`, `Deny`: what one event-loop turn
queued, or what queued while the previous group was in flight) is one call
of `holon_ledger_apply` (migration 0013; 0016 takes a rate limit's token in
one UPDATE) on an asyncio psycopg connection in autocommit: one round
trip, one transaction. The function does what `LedgerRegistry._apply_in`
does in Python (settlements, then the budgets and rate buckets locked in
key order, the reservations in arrival order, denials, the live-conformance
counts), so the budget and bucket rows are
locked for that one statement, not for several round trips and a commit,
and another gateway process waits for them at most that long.

`Group` builds a group's arguments, and its results from the function's
answer: the rows are built as in Python (`reserve_row`, `deny_row`: ids,
times and details), so a reservation's entry is known without reading it
back; a settlement's comes back from the function as the row's JSON.
Each write's result is what `LedgerRegistry.apply` gives for it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

import psycopg
from psycopg.conninfo import make_conninfo
from sqlalchemy import Float, Integer, Table
from sqlalchemy.exc import DBAPIError

from records._ledger_values import BudgetState, entry_from_row, period_key
from records._models import LedgerRow
from records._pg_probes import CLIENT_KEEPALIVES, SERVER_OPTIONS, ServerProbes, server_of
from records._rate import RateState, retry_after
from records._store import _unavailable, application_name
from records._stored_json import read_stored_json
from records._types import UTCDateTime, utcnow
from schema.errors import NotFound
from schema.jsontext import dumps

if TYPE_CHECKING:
    from records._ledger_writes import LedgerWrite
    from records._store import Store

log = logging.getLogger(__name__)

__all__ = ["STATEMENT", "AsyncLedger", "Group"]

LEDGER = cast(Table, LedgerRow.__table__)
STATEMENT = "SELECT holon_ledger_apply(%s, %s, %s::jsonb, %s::jsonb, %s::json, %s::json)::text"


def _reader(column: Any) -> Any:
    """How a ledger column's value reads back from the row's JSON (None: as it is)."""
    if isinstance(column.type, UTCDateTime):
        return lambda v: datetime.fromisoformat(v).astimezone(UTC)
    if isinstance(column.type, Float):
        return float
    if isinstance(column.type, Integer):
        return int
    return None


_READERS = {c.name: reader for c in LEDGER.c if (reader := _reader(c)) is not None}


def _row_from_json(values: dict[str, Any]) -> dict[str, Any]:
    for name, read in _READERS.items():
        value = values.get(name)
        if value is not None:
            values[name] = read(value)
    return values


def _json_row(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the function reads it: times as ISO 8601 with their zone."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


class AsyncLedger:
    """The ledger's group commit on asyncio connections (PostgreSQL), used from one event
    loop: each group in flight has a connection of its own (the caller bounds how many),
    kept open for the next."""

    def __init__(self, store: Store) -> None:
        self._store = store
        url = store.engine.url.set(drivername="postgresql")
        self._conninfo = url.render_as_string(hide_password=False)
        # What the engine's connections have too, unless the URL says otherwise: a name
        # (`holon <pid>`, taken at connect time) and the keepalives (records._store).
        self._named = "application_name" in url.query
        self._client = {k: v for k, v in CLIENT_KEEPALIVES.items() if k not in url.query}
        # The URL's own options last: they win.
        own = url.query.get("options", "")
        self._own = own if isinstance(own, str) else " ".join(own)
        self._probes = ServerProbes(server_of(url))
        self._idle: list[psycopg.AsyncConnection[Any]] = []
        self._open: set[psycopg.AsyncConnection[Any]] = set()

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
        # Autocommit: the function's statement is its own transaction, committed (and
        # its locks let go) when it returns.
        named = {} if self._named else {"application_name": application_name()}
        conninfo = make_conninfo(self._conninfo, **self._client, **named)
        connect = psycopg.AsyncConnection.connect
        # UTC: the times in its JSON, asked at startup or, where a pooler refuses
        # startup options, set before its first statement.
        if self._probes.wanted:
            options = f"-c TimeZone=UTC {SERVER_OPTIONS} {self._own}".strip()
            try:
                connection = await connect(conninfo, autocommit=True, options=options)
            except psycopg.OperationalError as exc:
                if not self._probes.refused(exc, self._own):
                    raise
            else:
                self._open.add(connection)
                return connection
        connection = await connect(conninfo, autocommit=True)
        self._open.add(connection)
        try:
            await connection.execute("SET TimeZone TO 'UTC'")
        except BaseException:
            self._discard(connection)
            raise
        return connection

    def _discard(self, connection: psycopg.AsyncConnection[Any]) -> None:
        self._open.discard(connection)
        if not connection.closed:
            connection.pgconn.finish()

    def close(self) -> None:
        """Close the connections (synchronously: from any thread, with or without a loop)."""
        self._idle = []
        for connection in list(getattr(self, "_open", ())):  # set unless __init__ failed
            self._discard(connection)

    def __del__(self) -> None:  # a writer dropped without `close` (its loop gone, say)
        self.close()

    async def apply(self, writes: Sequence[LedgerWrite]) -> list[Any]:
        """Apply `writes` in one transaction; each one's result or HolonError, in order (as
        `LedgerRegistry.apply`). An exception: the whole group failed, nothing was written."""
        group = Group(writes)
        params = group.params
        try:
            connection = await self._connect()
        except psycopg.Error as exc:
            wrapped = DBAPIError.instance(STATEMENT, params, exc, psycopg.Error)
            raise _unavailable(self._store.engine, wrapped) from None
        try:
            cursor = await connection.execute(STATEMENT, params)
            found = await cursor.fetchone()
        except psycopg.Error as exc:
            if connection.broken or isinstance(exc, psycopg.OperationalError):
                self._discard(connection)
            else:
                self._idle.append(connection)
            wrapped = DBAPIError.instance(STATEMENT, params, exc, psycopg.Error)
            if isinstance(exc, psycopg.OperationalError):
                raise _unavailable(self._store.engine, wrapped) from None
            raise wrapped from exc
        except BaseException:  # cancelled mid-statement: the connection's state is unknown
            self._discard(connection)
            raise
        self._idle.append(connection)
        assert found is not None
        return group.results(read_stored_json(found[0]))


class Group:
    """One group's arguments of `holon_ledger_apply` (`params`, for `STATEMENT`), and each
    write's result from the function's answer (`results`). The rows are built here as in
    Python (`reserve_row`, `deny_row`), so a reservation's entry is known without reading it
    back."""

    def __init__(self, writes: Sequence[LedgerWrite]) -> None:
        from records._ledger_writes import Deny, Reserve, Settle, deny_row, reserve_row

        now = utcnow()
        self._results: list[Any] = [None] * len(writes)
        self._settles: list[tuple[int, Settle]] = []
        self._reserves: list[tuple[int, Reserve, str | None]] = []
        settle_args: list[dict[str, Any]] = []
        reserve_args: list[dict[str, Any]] = []
        reserve_rows: list[dict[str, Any]] = []
        deny_rows: list[dict[str, Any]] = []
        for index, write in enumerate(writes):
            if isinstance(write, Settle):
                self._settles.append((index, write))
                settle_args.append(
                    {
                        "id": write.ledger_id,
                        "cost": str(write.cost),
                        "cost_source": write.cost_source,
                        "outcome_code": write.outcome_code,
                        "latency_ms": write.latency_ms,
                    }
                )
            elif isinstance(write, Reserve):
                period = None if write.budget is None else period_key(write.budget[0], now)
                row = reserve_row(write, period, now)
                self._results[index] = entry_from_row(row)
                self._reserves.append((index, write, period))
                limit = write.rate_limit
                reserve_rows.append(_json_row(row))
                control: dict[str, Any] = {"m": write.mandate_id, "cap": str(write.cap)}
                if write.budget is not None:
                    control.update(p=period, amount=str(write.budget[1]))
                if limit is not None:  # its keys only with a limit (the function asks `?`)
                    control.update(units=limit.units_per_us, capacity=limit.capacity)
                reserve_args.append(control)
            else:
                assert isinstance(write, Deny)
                row = deny_row(write, now)
                self._results[index] = entry_from_row(row)
                deny_rows.append(_json_row(row))
        self.params = (
            now,
            now.date().isoformat(),  # the conformance day (records._conformance)
            dumps(settle_args),
            dumps(reserve_args),
            dumps(reserve_rows),
            dumps(deny_rows),
        )

    def results(self, out: dict[str, Any]) -> list[Any]:
        """Each write's result, in order, from the function's answer `out`."""
        results = self._results
        for (index, settle), value in zip(self._settles, out["settles"], strict=True):
            results[index] = (
                NotFound(f"no ledger row {settle.ledger_id!r}")
                if value is None
                else entry_from_row(_row_from_json(value))
            )
        for (index, reserve, period), value in zip(self._reserves, out["reserves"], strict=True):
            if value is True:
                continue
            if "budget" in value:
                spent, held = value["budget"]
                assert reserve.budget is not None and period is not None
                results[index] = BudgetState(
                    reserve.mandate_id,
                    period,
                    reserve.budget[1],
                    Decimal(spent),
                    Decimal(held),
                    reserve.cap,
                    True,
                )
            else:
                level, at = value["rate"]
                assert reserve.rate_limit is not None
                retry_at, seconds = retry_after(
                    reserve.rate_limit, int(level), datetime.fromisoformat(at).astimezone(UTC)
                )
                results[index] = RateState(
                    reserve.mandate_id, reserve.rate_limit, retry_at, seconds
                )
        return results
