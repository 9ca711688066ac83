"""The billing ledger and budgets (docs/gateway.md, "Ledger fields", "Mandates").

Every live call writes one ledger row, allowed or denied. An allowed call
first *reserves* its worst case (the mandate's per-call cap) against the
period's budget, in the same transaction that checks the budget, so N
concurrent calls can never overspend; when the outcome is known the row is
*settled* to min(cost, cap). A reservation whose process died is charged in
full once it outlives the call's deadline (`expires_at`): status `expired`,
`cost_usd` = the reservation, `cost_source` `reserved`, reason
`agent_may_have_been_called`. The gateway writes nothing between the
reservation and the agent call (a commit there would cost every call), so
after a crash nothing tells a call that never reached its agent from one
whose answer was already sent; charging the cap keeps the budget's promise
either way, and a crash costs a caller at most the cap of each call it had
in flight. A settlement that still arrives corrects the charge down to
min(cost, cap).

Money is Decimal, stored as text: exact on both databases. The budget row of
(mandate, period) is the lock that serialises reservations against one
budget: `SELECT … FOR UPDATE` on PostgreSQL; on SQLite every write
transaction holds the database lock from its first statement. A mandate's
rate bucket (records._buckets) is locked the same way, after the budgets,
and a reservation takes its token in the same transaction.

The writes are values (`Reserve`, `Settle`, `Deny`: records._ledger_writes). `apply` commits a
group of them in one transaction, with one budget read and one budget update
per (mandate, period): the gateway batches the writes of one event-loop turn
and applies them right there on SQLite (`wait_s` bounds the wait for another
process's writer). `submit` queues one write for the *group commit* thread
(records._group), which takes every write queued since its last commit: the
path for SQLite when the lock is busy. On PostgreSQL the gateway's groups
are one statement each, awaited on its loop (`async_ledger`,
records._ledger_pg), where the same logic runs in the database. At hundreds of
calls a second either replaces hundreds of small transactions (and, on
SQLite, writers sleeping in the busy handler) by a few dozen. The direct
methods (`reserve`, `settle`, `deny`) apply one write in its own transaction,
in the calling thread.
"""

from __future__ import annotations

import builtins
import logging
import weakref
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Table, select
from sqlalchemy.exc import OperationalError

from records._buckets import available, lock_buckets, read_bucket, write_buckets
from records._conformance import count_live
from records._group import GroupCommit
from records._ledger_sql import Busy, LedgerSql
from records._ledger_values import (
    ZERO,
    BudgetPeriod,
    BudgetState,
    CallEntry,
    DecisionCode,
    LedgerEntry,
    budget_refusal,
    entry_from_row,
    period_key,
)
from records._ledger_writes import Deny, LedgerWrite, Reserve, Settle, deny_row, reserve_row
from records._models import BudgetRow, LedgerRow
from records._pages import Page, check_limit, decode_cursor, page_of
from records._rate import RateLimit, RateState
from records._registry import Registry
from records._statuses import LedgerStatus
from records._store import _unavailable
from records._types import utcnow
from schema.errors import NotFound

if TYPE_CHECKING:
    from records._ledger_pg import AsyncLedger
    from records._store import Store

log = logging.getLogger(__name__)

# What a settle still changes: a reservation, or one that expired before its outcome came.
_UNSETTLED = (LedgerStatus.RESERVED, LedgerStatus.EXPIRED)

__all__ = ["LedgerRegistry"]

LEDGER = cast(Table, LedgerRow.__table__)
BUDGETS = cast(Table, BudgetRow.__table__)


@dataclass
class AgentTotals:
    """One agent's live calls over a span, every caller's together (`agent_totals`)."""

    allowed: int = 0
    denied: int = 0
    cost_usd: Decimal = Decimal(0)


@dataclass
class _Budget:
    """A locked budget row, changed in memory and written once at the end of the group."""

    spent: Decimal
    reserved: Decimal
    changed: bool = False


class LedgerRegistry(Registry):
    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._sql = LedgerSql(store.engine)
        self._group: GroupCommit[LedgerWrite] = GroupCommit(self._apply_group)
        self._async: weakref.WeakSet[AsyncLedger] = weakref.WeakSet()

    # -- the life of one call ----------------------------------------------

    def deny(
        self,
        call: CallEntry,
        *,
        mandate_id: str | None,
        reason: str,
        details: dict[str, Any],
        mandate_revision: int | None = None,
        record_eval_id: str | None = None,
    ) -> LedgerEntry:
        """Record a call that was decided `deny` (the agent is never called)."""
        result: LedgerEntry = self._apply_one(
            Deny(call, mandate_id, reason, details, mandate_revision, record_eval_id)
        )
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
        rate_limit: RateLimit | None = None,
    ) -> LedgerEntry | BudgetState | RateState:
        """Reserve `cap` for an allowed call; the budget's state instead when it cannot afford
        it, or the rate limit's when its bucket holds no token.

        Nothing is written when the budget or the limit refuses: the caller
        decides whether another mandate may pay, and records the denial once.
        """
        result: LedgerEntry | BudgetState | RateState = self._apply_one(
            Reserve(call, mandate_id, cap, expires_at, budget, details, rate_limit=rate_limit)
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
            Settle(ledger_id, outcome_code, cost, cost_source, latency_ms)
        )
        return result

    # -- groups of writes ------------------------------------------------------

    def apply(
        self, writes: Sequence[LedgerWrite], *, wait_s: float | None = None
    ) -> builtins.list[Any] | None:
        """Apply `writes` in one transaction: each one's result, or the HolonError it raised
        (a settlement of an unknown row, say), in order.

        With `wait_s`, SQLite's write lock is waited for that long at most;
        None means it stayed taken and nothing was written. An exception
        means the transaction as a whole failed and nothing was written.
        """
        return self._transaction(writes, wait_s)

    def submit(self, write: LedgerWrite) -> Future[Any]:
        """Queue `write` for the group commit thread; the future resolves (to what `apply`
        gives for it, or its exception) once it is committed."""
        return self._group.submit(write)

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every write submitted so far is committed; False on timeout."""
        return self._group.drain(timeout)

    def async_ledger(self) -> AsyncLedger:
        """The group commit of one event loop on PostgreSQL (records._ledger_pg): one
        statement a group, awaited on the loop. Its connection closes with the store."""
        from records._ledger_pg import AsyncLedger

        if not self._sql.postgres:
            raise ValueError("the asyncio ledger is PostgreSQL's")
        ledger = AsyncLedger(self._store)
        self._async.add(ledger)
        return ledger

    def close(self) -> None:
        """Close the asyncio ledgers' connections (the store is closing)."""
        for ledger in list(self._async):
            ledger.close()

    def expire(self, *, now: datetime | None = None) -> int:
        """Charge every reservation past its deadline (a crashed call) in full; how many."""
        now = now or utcnow()
        sql = self._sql

        def sweep(cursor: Any) -> int:
            stale = sql.stale(cursor, now)
            budgets: dict[tuple[str, str], _Budget] = {}
            keys = sorted({(m, p) for _, m, p, _ in stale if m and p})
            for mandate_id, period in keys:
                found = self._lock_budget(cursor, mandate_id, period, create=False)
                if found is not None:
                    budgets[(mandate_id, period)] = found
            self._charge_expired(cursor, stale, budgets)
            self._write_budgets(cursor, budgets, now)
            return len(stale)

        with self._sql_errors(), sql.transaction() as cursor:
            return sweep(cursor)

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

    def rate_available(
        self, mandate_id: str, limit: RateLimit, *, now: datetime | None = None
    ) -> int:
        """How many calls `limit` lets the mandate make now (whole tokens in its bucket); a
        reading, as `budget` is: only a reservation takes one."""
        return available(self._store, mandate_id, limit, now or utcnow())

    def judge(
        self,
        mandate_id: str,
        *,
        cap: Decimal,
        budget: tuple[BudgetPeriod, Decimal] | None,
        rate_limit: RateLimit | None,
        now: datetime,
    ) -> BudgetState | RateState | None:
        """What a reservation of `cap` under the mandate would be answered at `now`, without
        making it: the budget's refusal, else the rate limit's, else None (it would go
        through). The reservation's own judgements (`budget_refusal`, `Bucket.take`), in
        its order, on rows read without a lock: `holon mandates check`."""
        if budget is not None:
            period = period_key(budget[0], now)
            spent, reserved = self.budget(mandate_id, period)
            refused = budget_refusal(mandate_id, period, budget[1], spent, reserved, cap)
            if refused is not None:
                return refused
        if rate_limit is not None:
            return read_bucket(self._store, mandate_id, now).take(rate_limit)
        return None

    def list(
        self,
        *,
        caller: str | None = None,
        mandate_id: str | None = None,
        agent_id: str | None = None,
        decision: DecisionCode | None = None,
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
        return page_of(rows, limit, lambda entry: entry.id)

    def agent_totals(self, agent_ids: Sequence[str], *, since: datetime) -> dict[str, AgentTotals]:
        """Per agent, its live calls since `since`: allowed, denied, and what the allowed
        ones cost (settled: their cost; still reserved or expired: what they reserved),
        every caller's together. Aggregates only: no row, no caller."""
        out = {a: AgentTotals() for a in agent_ids}
        if not agent_ids:
            return out
        t = LEDGER.c
        query = select(t.agent_id, t.decision, t.status, t.cost_usd, t.reserved_usd).where(
            t.agent_id.in_(list(agent_ids)), t.created_at >= since
        )
        with self._store.read() as session:
            result = session.connection().execute(query.execution_options(yield_per=1000))
            for agent, decision, status, cost, reserved in result:
                totals = out[agent]
                if decision != "allow":
                    totals.denied += 1
                    continue
                totals.allowed += 1
                totals.cost_usd += Decimal(cost if status == "settled" else reserved)
        return out

    # -- applying writes -------------------------------------------------------

    def _apply_one(self, write: LedgerWrite) -> Any:
        (result,) = self._apply_group([write])
        if isinstance(result, BaseException):
            raise result
        return result

    def _apply_group(self, writes: Sequence[LedgerWrite]) -> builtins.list[Any]:
        results = self._transaction(writes, None)
        assert results is not None  # only a bounded wait gives up
        return results

    def _transaction(
        self, writes: Sequence[LedgerWrite], wait_s: float | None
    ) -> builtins.list[Any] | None:
        try:
            with self._sql_errors(), self._sql.transaction(wait_s) as cursor:
                return self._apply_in(cursor, writes)
        except Busy:
            return None

    @contextmanager
    def _sql_errors(self) -> Iterator[None]:
        """A store that cannot be reached (or written: disk full, read-only) is
        StoreUnavailable, as for every other unit of work."""
        try:
            yield
        except OperationalError as exc:
            raise _unavailable(self._store.engine, exc) from None

    def _apply_in(self, cursor: Any, writes: Sequence[LedgerWrite]) -> builtins.list[Any]:
        """Apply `writes` in the transaction of `cursor`; each one's result, or its HolonError.

        Order: settlements first (they free budget), then the budgets that
        reservations need are locked (PostgreSQL: FOR UPDATE, in key order),
        then their mandates' rate buckets (in id order, after every budget),
        then reservations in arrival order, then denials; each touched
        budget and bucket row is written once.
        """
        now = utcnow()
        results: builtins.list[Any] = [None] * len(writes)
        budgets: dict[tuple[str, str], _Budget] = {}
        settles = [(i, w) for i, w in enumerate(writes) if isinstance(w, Settle)]
        settled: builtins.list[dict[str, Any]] = []
        if settles:
            settled = self._settle_all(cursor, settles, results, budgets, now)
        reserves = [(i, w) for i, w in enumerate(writes) if isinstance(w, Reserve)]
        if reserves:
            self._reserve_all(cursor, reserves, results, budgets, now)
        denials = [(i, w) for i, w in enumerate(writes) if isinstance(w, Deny)]
        rows: builtins.list[dict[str, Any]] = []
        if denials:
            for index, write in denials:
                row = deny_row(write, now)
                rows.append(row)
                results[index] = entry_from_row(row)
            self._sql.insert(cursor, rows)
        self._write_budgets(cursor, budgets, now)
        # Live conformance (records._conformance) counts in this same transaction.
        count_live(cursor, self._sql.postgres, settled, rows, now)
        return results

    def _settle_all(
        self,
        cursor: Any,
        settles: Sequence[tuple[int, Settle]],
        results: builtins.list[Any],
        budgets: dict[tuple[str, str], _Budget],
        now: datetime,
    ) -> builtins.list[dict[str, Any]]:
        """Settle each write's row; the rows this group settled (not the idempotent repeats)."""
        ids = sorted({w.ledger_id for _, w in settles})
        found = {row["id"]: row for row in self._sql.rows(cursor, ids)}
        keys = sorted(
            {
                (row["mandate_id"], row["period"])
                for row in found.values()
                if row["period"] is not None
                and row["mandate_id"] is not None
                and row["status"] in _UNSETTLED
            }
        )
        for mandate_id, period in keys:
            budget = self._lock_budget(cursor, mandate_id, period, create=False)
            if budget is not None:
                budgets[(mandate_id, period)] = budget
        updates = []
        settled = []
        for index, write in settles:
            row = found.get(write.ledger_id)
            if row is None:
                results[index] = NotFound(f"no ledger row {write.ledger_id!r}")
                continue
            if row["status"] not in _UNSETTLED:  # settled already: idempotent
                results[index] = entry_from_row(row)
                continue
            reserved = Decimal(row["reserved_usd"])
            charged = min(write.cost, reserved)
            held = budgets.get((row["mandate_id"], row["period"]))
            if held is not None:
                if row["status"] == LedgerStatus.RESERVED:
                    held.reserved = max(held.reserved - reserved, ZERO)
                    held.spent += charged
                else:  # expired: its hold was charged in full; the outcome corrects that
                    held.spent = max(held.spent - Decimal(row["cost_usd"]), ZERO) + charged
                held.changed = True
            # What the settle statement writes; the row the result is read from takes the same.
            change = {
                "cost_usd": str(charged),
                "cost_source": write.cost_source,
                "outcome_code": write.outcome_code,
                "latency_ms": write.latency_ms,
                "settled_at": now,
            }
            row.update(status=LedgerStatus.SETTLED, **change)
            updates.append({"id": row["id"], **change})
            results[index] = entry_from_row(row)
            settled.append(row)
        if updates:
            self._sql.settle(cursor, updates)
        return settled

    def _reserve_all(
        self,
        cursor: Any,
        reserves: Sequence[tuple[int, Reserve]],
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
                locked = self._lock_budget(cursor, key[0], key[1], create=True)
                assert locked is not None
                budgets[key] = locked
        buckets = lock_buckets(
            self._sql, cursor, list({w.mandate_id for _, w in reserves if w.rate_limit}), now
        )
        rows = []
        for index, write in reserves:
            period = periods.get(index)
            held = None
            if write.budget is not None and period is not None:
                key = (write.mandate_id, period)
                held = budgets[key]
                # A hold left by a crashed call counts until it expires, and then as
                # spent (`expire`): sweeping it here would free nothing.
                refused = budget_refusal(
                    write.mandate_id, period, write.budget[1], held.spent, held.reserved, write.cap
                )
                if refused is not None:
                    results[index] = refused
                    continue
            # After the budget: a mandate that cannot pay says so (402), not "retry
            # later", and a call the budget refuses takes no token.
            if write.rate_limit is not None:
                limited = buckets[write.mandate_id].take(write.rate_limit)
                if limited is not None:
                    results[index] = limited
                    continue
            if held is not None:
                held.reserved += write.cap
                held.changed = True
            row = reserve_row(write, period, now)
            rows.append(row)
            results[index] = entry_from_row(row)
        if rows:
            self._sql.insert(cursor, rows)
        write_buckets(self._sql, cursor, buckets)

    def _lock_budget(
        self, cursor: Any, mandate_id: str, period: str, *, create: bool
    ) -> _Budget | None:
        """The budget row of (mandate, period), locked (created first if `create`)."""
        found = self._sql.budget(cursor, mandate_id, period)
        if found is None:
            if not create:
                return None
            self._sql.create_budget(cursor, mandate_id, period, utcnow())
            found = self._sql.budget(cursor, mandate_id, period)
            assert found is not None
        return _Budget(*found)

    def _charge_expired(
        self,
        cursor: Any,
        stale: Sequence[tuple[str, str | None, str | None, str]],
        budgets: dict[tuple[str, str], _Budget],
    ) -> None:
        """Mark reservations `expired`, charged in full: their holds move from reserved to
        spent on their (locked) budgets. The agent may have been called, and its answer
        sent, before the process died (see the module doc)."""
        if not stale:
            return
        for _, mandate_id, period, reserved in stale:
            held = budgets.get((mandate_id or "", period or ""))
            if held is not None:
                held.reserved = max(held.reserved - Decimal(reserved), ZERO)
                held.spent += Decimal(reserved)
                held.changed = True
        self._sql.expire(cursor, [ledger_id for ledger_id, *_ in stale])

    def _write_budgets(
        self, cursor: Any, budgets: dict[tuple[str, str], _Budget], now: datetime
    ) -> None:
        changed = [
            {
                "mandate_id": mandate_id,
                "period": period,
                "spent_usd": str(held.spent),
                "reserved_usd": str(held.reserved),
                "updated_at": now,
            }
            for (mandate_id, period), held in sorted(budgets.items())
            if held.changed
        ]
        if changed:
            self._sql.update_budgets(cursor, changed)
