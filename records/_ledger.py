"""The billing ledger and budgets (GATEWAY.md, "Billing ledger", "Mandates").

Every live call writes one ledger row, allowed or denied. An allowed call
first *reserves* its worst case (the mandate's per-call cap) against the
period's budget, in the same transaction that checks the budget, so N
concurrent calls can never overspend; when the outcome is known the row is
*settled* to min(cost, cap). A reservation whose process died is released
once it outlives the call's deadline (`expires_at`).

Money is Decimal, stored as text: exact on both databases. The budget row of
(mandate, period) is the lock that serialises reservations against one
budget: `SELECT … FOR UPDATE` on PostgreSQL; on SQLite every write
transaction holds the database lock from its first statement.

Live traffic writes through a *group commit* (records._group; `submit_reserve`,
`submit_settle`, `submit_deny`): one thread per process takes every write
queued since its last commit and applies them in one transaction, with one
budget read and one budget update per (mandate, period). A reservation is
still committed before its future resolves, so before the agent is called.
At hundreds of calls a second this replaces hundreds of small transactions
(and, on SQLite, writers sleeping in the busy handler while another holds
the lock) by a few dozen. The direct methods (`reserve`, `settle`, `deny`)
apply one write in its own transaction, in the calling thread.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Connection, Table, bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from records._group import GroupCommit
from records._ids import ulid
from records._ledger_values import (
    ZERO,
    BudgetPeriod,
    BudgetState,
    CallEntry,
    LedgerEntry,
    entry_from_row,
    period_key,
)
from records._models import BudgetRow, LedgerRow
from records._pages import Page, check_limit, decode_cursor, encode_cursor
from records._types import utcnow
from schema.errors import NotFound

if TYPE_CHECKING:
    from records._store import Store

log = logging.getLogger(__name__)

__all__ = ["LedgerRegistry"]

LEDGER = cast(Table, LedgerRow.__table__)
BUDGETS = cast(Table, BudgetRow.__table__)


# The hot statements, built once: building a statement costs more than running
# it on SQLite (bound values are `b_*` parameters).
_SELECT_BUDGET = (
    select(BUDGETS.c.spent_usd, BUDGETS.c.reserved_usd)
    .where(
        BUDGETS.c.mandate_id == bindparam("b_mandate"), BUDGETS.c.period == bindparam("b_period")
    )
    # FOR UPDATE: PostgreSQL serialises reservations on this row; SQLite
    # renders nothing (its write transaction already holds the lock).
    .with_for_update()
)
_SELECT_ROWS = (
    select(LEDGER)
    .where(LEDGER.c.id.in_(bindparam("b_ids", expanding=True)))
    .order_by(LEDGER.c.id)
    .with_for_update()
)
_SELECT_STALE = (
    select(LEDGER.c.id, LEDGER.c.mandate_id, LEDGER.c.period, LEDGER.c.reserved_usd)
    .where(
        LEDGER.c.mandate_id == bindparam("b_mandate"),
        LEDGER.c.period == bindparam("b_period"),
        LEDGER.c.status == "reserved",
        LEDGER.c.expires_at < bindparam("b_now"),
    )
    .with_for_update()
)
_EXPIRE_ROWS = (
    update(LEDGER)
    .where(LEDGER.c.id.in_(bindparam("b_ids", expanding=True)))
    .values(status="expired")
)
_SETTLE_ROW = (
    update(LEDGER)
    .where(LEDGER.c.id == bindparam("b_id"))
    .values(
        status="settled",
        cost_usd=bindparam("cost_usd"),
        cost_source=bindparam("cost_source"),
        outcome_code=bindparam("outcome_code"),
        latency_ms=bindparam("latency_ms"),
        settled_at=bindparam("settled_at"),
    )
)
_UPDATE_BUDGET = (
    update(BUDGETS)
    .where(
        BUDGETS.c.mandate_id == bindparam("b_mandate"),
        BUDGETS.c.period == bindparam("b_period"),
    )
    .values(
        spent_usd=bindparam("spent_usd"),
        reserved_usd=bindparam("reserved_usd"),
        updated_at=bindparam("updated_at"),
    )
)
_INSERT_ROWS = insert(LEDGER)


# -- the writes, as values (applied alone or in a group) -------------------------


@dataclass(frozen=True)
class _Reserve:
    call: CallEntry
    mandate_id: str
    cap: Decimal
    expires_at: datetime
    budget: tuple[BudgetPeriod, Decimal] | None
    details: dict[str, Any]


@dataclass(frozen=True)
class _Settle:
    ledger_id: str
    outcome_code: str
    cost: Decimal
    cost_source: str
    latency_ms: float


@dataclass(frozen=True)
class _Deny:
    call: CallEntry
    mandate_id: str | None
    reason: str
    details: dict[str, Any]


_Write = _Reserve | _Settle | _Deny


@dataclass
class _Budget:
    """A locked budget row, changed in memory and written once at the end of the group."""

    spent: Decimal
    reserved: Decimal
    changed: bool = False


class LedgerRegistry:
    def __init__(self, store: Store) -> None:
        self._store = store
        self._group: GroupCommit[_Write] = GroupCommit(self._apply_group)

    # -- the life of one call ----------------------------------------------

    def deny(
        self,
        call: CallEntry,
        *,
        mandate_id: str | None,
        reason: str,
        details: dict[str, Any],
    ) -> LedgerEntry:
        """Record a call that was decided `deny` (the agent is never called)."""
        result: LedgerEntry = self._apply_one(_Deny(call, mandate_id, reason, details))
        return result

    def reserve(
        self,
        call: CallEntry,
        *,
        mandate_id: str,
        cap: Decimal,
        expires_at: datetime,
        budget: tuple[BudgetPeriod, Decimal] | None,
        details: dict[str, Any],
    ) -> LedgerEntry | BudgetState:
        """Reserve `cap` for an allowed call; the budget's state instead when it cannot afford it.

        Nothing is written when the budget refuses: the caller decides whether
        another mandate may pay, and records the denial once.
        """
        result: LedgerEntry | BudgetState = self._apply_one(
            _Reserve(call, mandate_id, cap, expires_at, budget, details)
        )
        return result

    def settle(
        self,
        ledger_id: str,
        *,
        outcome_code: str,
        cost: Decimal,
        cost_source: str,
        latency_ms: float,
    ) -> LedgerEntry:
        """Settle a reservation: charge min(cost, cap), release the rest. Idempotent."""
        result: LedgerEntry = self._apply_one(
            _Settle(ledger_id, outcome_code, cost, cost_source, latency_ms)
        )
        return result

    # The same writes through the group commit: each future resolves (to the
    # same value, or the same exception) once its write is committed.

    def submit_deny(
        self, call: CallEntry, *, mandate_id: str | None, reason: str, details: dict[str, Any]
    ) -> Future[LedgerEntry]:
        return self._group.submit(_Deny(call, mandate_id, reason, details))

    def submit_reserve(
        self,
        call: CallEntry,
        *,
        mandate_id: str,
        cap: Decimal,
        expires_at: datetime,
        budget: tuple[BudgetPeriod, Decimal] | None,
        details: dict[str, Any],
    ) -> Future[LedgerEntry | BudgetState]:
        return self._group.submit(_Reserve(call, mandate_id, cap, expires_at, budget, details))

    def submit_settle(
        self,
        ledger_id: str,
        *,
        outcome_code: str,
        cost: Decimal,
        cost_source: str,
        latency_ms: float,
    ) -> Future[LedgerEntry]:
        return self._group.submit(_Settle(ledger_id, outcome_code, cost, cost_source, latency_ms))

    def expire(self, *, now: datetime | None = None) -> int:
        """Release every reservation past its deadline (a crashed call); how many."""
        now = now or utcnow()
        with self._store.write() as session:
            conn = session.connection()
            stale = conn.execute(
                select(LEDGER.c.id, LEDGER.c.mandate_id, LEDGER.c.period, LEDGER.c.reserved_usd)
                .where(LEDGER.c.status == "reserved", LEDGER.c.expires_at < now)
                .with_for_update()
            ).all()
            budgets: dict[tuple[str, str], _Budget] = {}
            keys = sorted({(r.mandate_id, r.period) for r in stale if r.period and r.mandate_id})
            for mandate_id, period in keys:
                found = self._lock_budget(conn, mandate_id, period, create=False)
                if found is not None:
                    budgets[(mandate_id, period)] = found
            self._release(conn, stale, budgets, now)
            self._write_budgets(conn, budgets, now)
            return len(stale)

    # -- reading -------------------------------------------------------------

    def get(self, request_id: str) -> LedgerEntry:
        with self._store.read() as session:
            row = (
                session.connection()
                .execute(select(LEDGER).where(LEDGER.c.request_id == request_id))
                .first()
            )
            if row is None:
                raise NotFound(f"no ledger row for request {request_id!r}")
            return entry_from_row(row._mapping)

    def budget(self, mandate_id: str, period: str) -> tuple[Decimal, Decimal]:
        """(spent, reserved) of a mandate in a period."""
        with self._store.read() as session:
            row = (
                session.connection()
                .execute(
                    select(BUDGETS.c.spent_usd, BUDGETS.c.reserved_usd).where(
                        BUDGETS.c.mandate_id == mandate_id, BUDGETS.c.period == period
                    )
                )
                .first()
            )
            if row is None:
                return ZERO, ZERO
            return Decimal(row.spent_usd), Decimal(row.reserved_usd)

    def list(
        self,
        *,
        caller: str | None = None,
        mandate_id: str | None = None,
        agent_id: str | None = None,
        decision: str | None = None,
        cursor: str | None = None,
        limit: int = 100,
    ) -> Page[LedgerEntry]:
        """Newest first; the cursor is the last row's id (ULIDs sort by time)."""
        check_limit(limit)
        before = decode_cursor(cursor)
        query = select(LEDGER).order_by(LEDGER.c.id.desc()).limit(limit + 1)
        if caller is not None:
            query = query.where(LEDGER.c.caller == caller)
        if mandate_id is not None:
            query = query.where(LEDGER.c.mandate_id == mandate_id)
        if agent_id is not None:
            query = query.where(LEDGER.c.agent_id == agent_id)
        if decision is not None:
            query = query.where(LEDGER.c.decision == decision)
        if before is not None:
            query = query.where(LEDGER.c.id < before)
        with self._store.read() as session:
            rows = [entry_from_row(r._mapping) for r in session.connection().execute(query)]
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(rows, encode_cursor(rows[-1].id) if more and rows else None)

    # -- applying writes -------------------------------------------------------

    def _apply_one(self, write: _Write) -> Any:
        (result,) = self._apply_group([write])
        if isinstance(result, BaseException):
            raise result
        return result

    def _apply_group(self, writes: Sequence[_Write]) -> builtins.list[Any]:
        """Apply `writes` in one transaction; each one's result, or the HolonError it raised.

        Order: settlements first (they free budget), then the budgets that
        reservations need are locked (PostgreSQL: FOR UPDATE, in key order),
        then reservations in arrival order (a budget is swept of expired
        holds when they would refuse one), then denials; each touched budget
        row is written once.
        """
        now = utcnow()
        results: builtins.list[Any] = [None] * len(writes)
        with self._store.write() as session:
            conn = session.connection()
            budgets: dict[tuple[str, str], _Budget] = {}
            settles = [(i, w) for i, w in enumerate(writes) if isinstance(w, _Settle)]
            if settles:
                self._settle_all(conn, settles, results, budgets, now)
            reserves = [(i, w) for i, w in enumerate(writes) if isinstance(w, _Reserve)]
            if reserves:
                self._reserve_all(conn, reserves, results, budgets, now)
            denials = [(i, w) for i, w in enumerate(writes) if isinstance(w, _Deny)]
            if denials:
                rows = []
                for index, write in denials:
                    row = _new_row(write.call, write.mandate_id, None, write.details, now)
                    row.update(decision="deny", reason=write.reason, status="denied")
                    row["settled_at"] = now
                    rows.append(row)
                    results[index] = entry_from_row(row)
                conn.execute(_INSERT_ROWS, rows)
            self._write_budgets(conn, budgets, now)
        return results

    def _settle_all(
        self,
        conn: Connection,
        settles: Sequence[tuple[int, _Settle]],
        results: builtins.list[Any],
        budgets: dict[tuple[str, str], _Budget],
        now: datetime,
    ) -> None:
        ids = sorted({w.ledger_id for _, w in settles})
        found = {r.id: dict(r._mapping) for r in conn.execute(_SELECT_ROWS, {"b_ids": ids})}
        keys = sorted(
            {
                (row["mandate_id"], row["period"])
                for row in found.values()
                if row["period"] is not None
                and row["mandate_id"] is not None
                and row["status"] in ("reserved", "expired")
            }
        )
        for mandate_id, period in keys:
            budget = self._lock_budget(conn, mandate_id, period, create=False)
            if budget is not None:
                budgets[(mandate_id, period)] = budget
        updates = []
        for index, write in settles:
            row = found.get(write.ledger_id)
            if row is None:
                results[index] = NotFound(f"no ledger row {write.ledger_id!r}")
                continue
            if row["status"] not in ("reserved", "expired"):  # settled already: idempotent
                results[index] = entry_from_row(row)
                continue
            reserved = Decimal(row["reserved_usd"])
            charged = min(write.cost, reserved)
            held = budgets.get((row["mandate_id"], row["period"]))
            if held is not None:
                # An expired reservation was already released by the sweep.
                if row["status"] == "reserved":
                    held.reserved = max(held.reserved - reserved, ZERO)
                held.spent += charged
                held.changed = True
            row.update(
                status="settled",
                cost_usd=str(charged),
                cost_source=write.cost_source,
                outcome_code=write.outcome_code,
                latency_ms=write.latency_ms,
                settled_at=now,
            )
            updates.append(
                {
                    "b_id": row["id"],
                    "cost_usd": row["cost_usd"],
                    "cost_source": write.cost_source,
                    "outcome_code": write.outcome_code,
                    "latency_ms": write.latency_ms,
                    "settled_at": now,
                }
            )
            results[index] = entry_from_row(row)
        if updates:
            conn.execute(_SETTLE_ROW, updates)

    def _reserve_all(
        self,
        conn: Connection,
        reserves: Sequence[tuple[int, _Reserve]],
        results: builtins.list[Any],
        budgets: dict[tuple[str, str], _Budget],
        now: datetime,
    ) -> None:
        periods = {
            index: period_key(write.budget[0], now)
            for index, write in reserves
            if write.budget is not None
        }
        keys = sorted({(w.mandate_id, periods[i]) for i, w in reserves if i in periods})
        for key in keys:
            if key not in budgets:
                locked = self._lock_budget(conn, key[0], key[1], create=True)
                assert locked is not None
                budgets[key] = locked
        swept: set[tuple[str, str]] = set()
        rows = []
        for index, write in reserves:
            period = periods.get(index)
            if write.budget is not None and period is not None:
                key = (write.mandate_id, period)
                held = budgets[key]
                amount = write.budget[1]
                if held.spent + held.reserved + write.cap > amount and key not in swept:
                    # Holds left by crashed calls count only until they expire:
                    # swept when they would refuse a call (and by `expire()`).
                    swept.add(key)
                    stale = conn.execute(
                        _SELECT_STALE, {"b_mandate": key[0], "b_period": key[1], "b_now": now}
                    ).all()
                    self._release(conn, stale, budgets, now)
                if held.spent + held.reserved + write.cap > amount:
                    results[index] = BudgetState(
                        write.mandate_id,
                        period,
                        amount,
                        held.spent,
                        held.reserved,
                        write.cap,
                        True,
                    )
                    continue
                held.reserved += write.cap
                held.changed = True
            row = _new_row(write.call, write.mandate_id, period, write.details, now)
            row.update(
                decision="allow",
                status="reserved",
                reserved_usd=str(write.cap),
                expires_at=write.expires_at,
            )
            rows.append(row)
            results[index] = entry_from_row(row)
        if rows:
            conn.execute(_INSERT_ROWS, rows)

    def _lock_budget(
        self, conn: Connection, mandate_id: str, period: str, *, create: bool
    ) -> _Budget | None:
        """The budget row of (mandate, period), locked (created first if `create`)."""
        key = {"b_mandate": mandate_id, "b_period": period}
        row = conn.execute(_SELECT_BUDGET, key).first()
        if row is None:
            if not create:
                return None
            values = {
                "mandate_id": mandate_id,
                "period": period,
                "spent_usd": "0",
                "reserved_usd": "0",
                "updated_at": utcnow(),
            }
            dialect = postgresql if self._store.dialect == "postgresql" else sqlite
            conn.execute(dialect.insert(BUDGETS).values(**values).on_conflict_do_nothing())
            row = conn.execute(_SELECT_BUDGET, key).one()
        return _Budget(Decimal(row.spent_usd), Decimal(row.reserved_usd))

    @staticmethod
    def _release(
        conn: Connection,
        stale: Sequence[Any],
        budgets: dict[tuple[str, str], _Budget],
        now: datetime,
    ) -> None:
        """Mark reservations `expired` and take their holds off their (locked) budgets."""
        if not stale:
            return
        for row in stale:
            held = budgets.get((row.mandate_id, row.period))
            if held is not None:
                held.reserved = max(held.reserved - Decimal(row.reserved_usd), ZERO)
                held.changed = True
        conn.execute(_EXPIRE_ROWS, {"b_ids": [r.id for r in stale]})

    @staticmethod
    def _write_budgets(
        conn: Connection, budgets: dict[tuple[str, str], _Budget], now: datetime
    ) -> None:
        changed = [
            {
                "b_mandate": mandate_id,
                "b_period": period,
                "spent_usd": str(held.spent),
                "reserved_usd": str(held.reserved),
                "updated_at": now,
            }
            for (mandate_id, period), held in sorted(budgets.items())
            if held.changed
        ]
        if changed:
            conn.execute(_UPDATE_BUDGET, changed)


def _new_row(
    call: CallEntry,
    mandate_id: str | None,
    period: str | None,
    details: dict[str, Any],
    now: datetime,
) -> dict[str, Any]:
    return {
        "id": "led_" + ulid(),
        "request_id": call.request_id,
        "caller": call.caller,
        "mandate_id": mandate_id,
        "period": period,
        "agent_id": call.agent_id,
        "agent_version": call.agent_version,
        "capability": call.capability,
        "decision": "",
        "reason": None,
        "details": details,
        "status": "",
        "reserved_usd": "0",
        "cost_usd": "0",
        "cost_source": None,
        "outcome_code": None,
        "latency_ms": None,
        "created_at": now,
        "expires_at": None,
        "settled_at": None,
    }
