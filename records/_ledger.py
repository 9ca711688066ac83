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
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from records._ids import ulid
from records._models import BudgetRow, LedgerRow
from records._pages import Page, check_limit, decode_cursor, encode_cursor
from records._types import utcnow
from schema.errors import NotFound

if TYPE_CHECKING:
    from records._store import Store

__all__ = [
    "BudgetPeriod",
    "BudgetState",
    "CallEntry",
    "LedgerEntry",
    "LedgerRegistry",
    "period_key",
]

BudgetPeriod = Literal["day", "week", "month", "year"]
ZERO = Decimal(0)


def period_key(period: BudgetPeriod, when: datetime) -> str:
    """The calendar period (UTC) that `when` falls in: 2026-11-29, 2026-W48, 2026-11, 2026."""
    if period == "day":
        return when.strftime("%Y-%m-%d")
    if period == "week":
        year, week, _ = when.isocalendar()
        return f"{year}-W{week:02d}"
    if period == "month":
        return when.strftime("%Y-%m")
    return when.strftime("%Y")


@dataclass(frozen=True)
class CallEntry:
    """What a live call is about, before anything is known of its outcome."""

    request_id: str
    caller: str
    capability: str
    agent_id: str | None
    agent_version: str | None


@dataclass(frozen=True)
class BudgetState:
    """A budget's standing in one period; `exhausted` when a reservation was refused."""

    mandate_id: str
    period: str
    amount: Decimal
    spent: Decimal
    reserved: Decimal
    cap: Decimal
    exhausted: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "mandate": self.mandate_id,
            "period": self.period,
            "budget_usd": str(self.amount),
            "spent_usd": str(self.spent),
            "reserved_usd": str(self.reserved),
            "remaining_usd": str(max(self.amount - self.spent - self.reserved, ZERO)),
            "cap_usd": str(self.cap),
        }


@dataclass(frozen=True)
class LedgerEntry:
    id: str
    request_id: str
    caller: str
    mandate_id: str | None
    period: str | None
    agent_id: str | None
    agent_version: str | None
    capability: str
    decision: str
    reason: str | None
    details: dict[str, Any]
    status: str
    reserved_usd: Decimal
    cost_usd: Decimal
    cost_source: str | None
    outcome_code: str | None
    latency_ms: float | None
    created_at: datetime
    expires_at: datetime | None
    settled_at: datetime | None


def _entry(row: LedgerRow) -> LedgerEntry:
    return LedgerEntry(
        id=row.id,
        request_id=row.request_id,
        caller=row.caller,
        mandate_id=row.mandate_id,
        period=row.period,
        agent_id=row.agent_id,
        agent_version=row.agent_version,
        capability=row.capability,
        decision=row.decision,
        reason=row.reason,
        details=row.details,
        status=row.status,
        reserved_usd=Decimal(row.reserved_usd),
        cost_usd=Decimal(row.cost_usd),
        cost_source=row.cost_source,
        outcome_code=row.outcome_code,
        latency_ms=row.latency_ms,
        created_at=row.created_at,
        expires_at=row.expires_at,
        settled_at=row.settled_at,
    )


class LedgerRegistry:
    def __init__(self, store: Store) -> None:
        self._store = store

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
        row = self._row(call, mandate_id=mandate_id, period=None, details=details)
        row.decision, row.reason, row.status = "deny", reason, "denied"
        row.settled_at = row.created_at
        with self._store.write() as session:
            session.add(row)
        return _entry(row)

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
        now = utcnow()
        period = period_key(budget[0], now) if budget is not None else None
        row = self._row(call, mandate_id=mandate_id, period=period, details=details)
        row.decision, row.status = "allow", "reserved"
        row.reserved_usd = str(cap)
        row.expires_at = expires_at
        with self._store.write() as session:
            if budget is not None and period is not None:
                state = self._lock_budget(session, mandate_id, period, budget[1], cap, now)
                if state.spent + state.reserved + cap > state.amount:
                    return replace(state, exhausted=True)
                session.execute(
                    update(BudgetRow)
                    .where(BudgetRow.mandate_id == mandate_id, BudgetRow.period == period)
                    .values(reserved_usd=str(state.reserved + cap), updated_at=now)
                )
            session.add(row)
        return _entry(row)

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
        now = utcnow()
        with self._store.write() as session:
            row = session.get(LedgerRow, ledger_id, with_for_update=True)
            if row is None:
                raise NotFound(f"no ledger row {ledger_id!r}")
            if row.status not in ("reserved", "expired"):
                return _entry(row)
            reserved = Decimal(row.reserved_usd)
            charged = min(cost, reserved)
            if row.period is not None and row.mandate_id is not None:
                budget = session.get(BudgetRow, (row.mandate_id, row.period), with_for_update=True)
                if budget is not None:
                    # An expired reservation was already released by the sweep.
                    held = reserved if row.status == "reserved" else ZERO
                    budget.reserved_usd = str(max(Decimal(budget.reserved_usd) - held, ZERO))
                    budget.spent_usd = str(Decimal(budget.spent_usd) + charged)
                    budget.updated_at = now
            row.status = "settled"
            row.cost_usd = str(charged)
            row.cost_source = cost_source
            row.outcome_code = outcome_code
            row.latency_ms = latency_ms
            row.settled_at = now
            session.flush()
            return _entry(row)

    def expire(self, *, now: datetime | None = None) -> int:
        """Release every reservation past its deadline (a crashed call); how many."""
        now = now or utcnow()
        with self._store.write() as session:
            rows = session.scalars(
                select(LedgerRow).where(LedgerRow.status == "reserved", LedgerRow.expires_at < now)
            ).all()
            for row in rows:
                self._release(session, row, now)
            return len(rows)

    # -- reading -------------------------------------------------------------

    def get(self, request_id: str) -> LedgerEntry:
        with self._store.read() as session:
            row = session.scalars(
                select(LedgerRow).where(LedgerRow.request_id == request_id)
            ).first()
            if row is None:
                raise NotFound(f"no ledger row for request {request_id!r}")
            return _entry(row)

    def budget(self, mandate_id: str, period: str) -> tuple[Decimal, Decimal]:
        """(spent, reserved) of a mandate in a period."""
        with self._store.read() as session:
            row = session.get(BudgetRow, (mandate_id, period))
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
        query = select(LedgerRow).order_by(LedgerRow.id.desc()).limit(limit + 1)
        if caller is not None:
            query = query.where(LedgerRow.caller == caller)
        if mandate_id is not None:
            query = query.where(LedgerRow.mandate_id == mandate_id)
        if agent_id is not None:
            query = query.where(LedgerRow.agent_id == agent_id)
        if decision is not None:
            query = query.where(LedgerRow.decision == decision)
        if before is not None:
            query = query.where(LedgerRow.id < before)
        with self._store.read() as session:
            rows = [_entry(r) for r in session.scalars(query)]
        more = len(rows) > limit
        rows = rows[:limit]
        return Page(rows, encode_cursor(rows[-1].id) if more and rows else None)

    # -- internals -----------------------------------------------------------

    @staticmethod
    def _row(
        call: CallEntry, *, mandate_id: str | None, period: str | None, details: dict[str, Any]
    ) -> LedgerRow:
        return LedgerRow(
            id="led_" + ulid(),
            request_id=call.request_id,
            caller=call.caller,
            mandate_id=mandate_id,
            period=period,
            agent_id=call.agent_id,
            agent_version=call.agent_version,
            capability=call.capability,
            decision="",
            reason=None,
            details=details,
            status="",
            reserved_usd="0",
            cost_usd="0",
            cost_source=None,
            outcome_code=None,
            latency_ms=None,
            created_at=utcnow(),
            expires_at=None,
            settled_at=None,
        )

    def _lock_budget(
        self,
        session: Session,
        mandate_id: str,
        period: str,
        amount: Decimal,
        cap: Decimal,
        now: datetime,
    ) -> BudgetState:
        """The budget row of (mandate, period), created if new, locked, expired holds released."""
        values = {
            "mandate_id": mandate_id,
            "period": period,
            "spent_usd": "0",
            "reserved_usd": "0",
            "updated_at": now,
        }
        insert = postgresql.insert if self._store.dialect == "postgresql" else sqlite.insert
        session.execute(insert(BudgetRow).values(**values).on_conflict_do_nothing())
        # FOR UPDATE: PostgreSQL serialises reservations on this row; SQLite
        # renders nothing (its write transaction already holds the lock).
        query = (
            select(BudgetRow)
            .where(BudgetRow.mandate_id == mandate_id, BudgetRow.period == period)
            .with_for_update()
            .execution_options(populate_existing=True)
        )
        budget = session.scalars(query).one()
        stale = session.scalars(
            select(LedgerRow).where(
                LedgerRow.mandate_id == mandate_id,
                LedgerRow.period == period,
                LedgerRow.status == "reserved",
                LedgerRow.expires_at < now,
            )
        ).all()
        for row in stale:
            self._release(session, row, now, budget)
        session.flush()
        return BudgetState(
            mandate_id=mandate_id,
            period=period,
            amount=amount,
            spent=Decimal(budget.spent_usd),
            reserved=Decimal(budget.reserved_usd),
            cap=cap,
            exhausted=False,
        )

    @staticmethod
    def _release(
        session: Session, row: LedgerRow, now: datetime, budget: BudgetRow | None = None
    ) -> None:
        if budget is None and row.period is not None and row.mandate_id is not None:
            budget = session.get(BudgetRow, (row.mandate_id, row.period), with_for_update=True)
        if budget is not None:
            held = Decimal(row.reserved_usd)
            budget.reserved_usd = str(max(Decimal(budget.reserved_usd) - held, ZERO))
            budget.updated_at = now
        row.status = "expired"
