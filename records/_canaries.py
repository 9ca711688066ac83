"""Canaries: holdout cases graded inside an agent's live traffic (docs/integrity.md).

The gateway sends a certified agent cases from its capability's active suite
among its live calls and grades each as an eval cell. Each graded canary is
a run here (`canary_runs`: billed to the operator, never to a caller's
mandate, and read only by the operator), and advances the drift test of the
agent version and capability (`canary_states`): one row per (agent, version,
capability) holding the test's state over the canaries graded since the
record's eval. A canary graded against another record than the row's (a
new eval came) starts the row afresh: only a new eval clears a drift.

This layer stores the test's state as JSON and never reads it: `advance`,
handed in by the caller, is the test (evals' DriftState), run inside the
write's transaction with the row locked, so two gateway processes grading
canaries of one agent at once both count. The drift it decides revokes the
version's certificates in the same transaction.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.dialects import postgresql, sqlite

from records._agent_record import RecordCanaries
from records._models import CanaryRunRow, CanaryStateRow
from records._pages import Page, decode_cursor, page_of
from records._registry import Registry
from records._rows import from_row, to_row
from records._types import utc_text, utcnow
from schema.errors import UsageError

__all__ = ["CANARY_WINDOW_DAYS", "Advance", "CanaryRegistry", "CanaryRun", "CanaryStanding"]

# The live score's sliding window (the total since the record's eval is kept too).
CANARY_WINDOW_DAYS = 7

# (the state so far, or None for a fresh test; passed?) -> (the state after, the drift
# it decided or None). Called once per canary, inside the write's transaction.
Advance = Callable[[dict[str, Any] | None, bool], tuple[dict[str, Any], dict[str, Any] | None]]


@dataclass(frozen=True)
class CanaryRun:
    """One graded canary."""

    request_id: str
    agent_id: str
    agent_version: str
    capability: str
    record_eval_id: str
    suite_id: str
    suite_version: int
    outcome: str
    passed: bool
    cost_usd: Decimal
    latency_ms: float
    at: datetime

    def to_json(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "agent": self.agent_id,
            "agent_version": self.agent_version,
            "capability": self.capability,
            "record_eval_id": self.record_eval_id,
            "suite": f"{self.suite_id}@{self.suite_version}",
            "outcome": self.outcome,
            "passed": self.passed,
            "cost_usd": str(self.cost_usd),
            "latency_ms": round(self.latency_ms, 3),
            "at": utc_text(self.at),
        }


@dataclass(frozen=True)
class CanaryStanding:
    """Where the drift test of one agent version and capability stands."""

    agent_id: str
    agent_version: str
    capability: str
    record_eval_id: str
    graded: int
    passed: int
    state: dict[str, Any]
    drifted_at: datetime | None
    drift: dict[str, Any] | None
    updated_at: datetime


class CanaryRegistry(Registry):
    def record(self, run: CanaryRun, advance: Advance) -> CanaryStanding:
        """Keep one graded canary and advance its drift test; a drift decided now revokes
        the version's certificates, with the evidence as the reason."""
        with self._store.write() as session:
            session.add(
                to_row(
                    CanaryRunRow,
                    run,
                    id=run.request_id,
                    created_at=run.at,
                    outcome_code=run.outcome,
                    cost_usd=str(run.cost_usd),
                )
            )
            # Insert-if-absent, then the row locked: two first canaries of a version at
            # once (MAX_IN_FLIGHT) both found no row on PostgreSQL and both inserted it,
            # the second failing on the key and its run lost.
            dialect = session.get_bind().dialect.name
            insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
            session.execute(
                insert(CanaryStateRow)
                .values(
                    agent_id=run.agent_id,
                    agent_version=run.agent_version,
                    capability=run.capability,
                    record_eval_id=run.record_eval_id,
                    graded=0,
                    passed=0,
                    state={},
                    updated_at=run.at,
                )
                .on_conflict_do_nothing()
            )
            key = (run.agent_id, run.agent_version, run.capability)
            row = session.get(CanaryStateRow, key, with_for_update=True)
            assert row is not None  # inserted above, or there already
            if row.record_eval_id != run.record_eval_id:  # another record: a fresh test
                row.record_eval_id = run.record_eval_id
                row.graded = row.passed = 0
                row.state = {}
                row.drifted_at = None
                row.drift = None
            state, drift = advance(row.state or None, run.passed)
            row.state = state
            row.graded += 1
            row.passed += run.passed
            row.updated_at = run.at
            if drift is not None and row.drifted_at is None:
                row.drifted_at = run.at
                row.drift = drift
                self._store.certificates.revoke_in(
                    session,
                    run.agent_id,
                    f"drift at {utc_text(run.at)}: {run.capability} passed {row.passed} of "
                    f"{row.graded} canaries since eval {run.record_eval_id}, below what was "
                    "certified",
                    version=run.agent_version,
                    now=run.at,
                )
            session.flush()
            return _standing(row)

    def standings(self, agent_id: str, agent_version: str) -> builtins.list[CanaryStanding]:
        """Every capability's drift test of an agent version, by capability."""
        with self._store.read() as session:
            rows = session.scalars(
                select(CanaryStateRow)
                .where(
                    CanaryStateRow.agent_id == agent_id,
                    CanaryStateRow.agent_version == agent_version,
                )
                .order_by(CanaryStateRow.capability)
            )
            return [_standing(r) for r in rows]

    def of_record(
        self, agent_id: str, agent_version: str, record_eval_id: str
    ) -> dict[str, RecordCanaries]:
        """Per capability, the canaries graded against the record of `record_eval_id`, as
        the record shows them."""
        with self._store.read() as session:
            rows = session.scalars(
                select(CanaryStateRow).where(
                    CanaryStateRow.agent_id == agent_id,
                    CanaryStateRow.agent_version == agent_version,
                    CanaryStateRow.record_eval_id == record_eval_id,
                )
            )
            return {row.capability: record_canaries(row) for row in rows}

    def drifted(
        self, agent_id: str, agent_version: str, record_eval_id: str
    ) -> CanaryStanding | None:
        """The first capability (by name) whose drift test decided drift against the
        record of `record_eval_id`; None when none did."""
        for standing in self.standings(agent_id, agent_version):
            if standing.record_eval_id == record_eval_id and standing.drift is not None:
                return standing
        return None

    def today(self, agent_id: str, now: datetime | None = None) -> tuple[dict[str, int], Decimal]:
        """Canaries sent to an agent since the UTC day began, per capability, and their cost."""
        start = (now or utcnow()).replace(hour=0, minute=0, second=0, microsecond=0)
        counts: dict[str, int] = {}
        spent = Decimal(0)
        with self._store.read() as session:
            rows = session.execute(
                select(CanaryRunRow.capability, CanaryRunRow.cost_usd).where(
                    CanaryRunRow.agent_id == agent_id, CanaryRunRow.created_at >= start
                )
            )
            for capability, cost in rows:
                counts[capability] = counts.get(capability, 0) + 1
                spent += Decimal(cost)
        return counts, spent

    def with_window(
        self,
        agent_id: str,
        agent_version: str,
        record_eval_id: str,
        now: datetime | None = None,
    ) -> dict[str, tuple[RecordCanaries, int, int]]:
        """Per capability, the canaries graded against the record of `record_eval_id` (as
        `of_record`) with (graded, passed) over the last CANARY_WINDOW_DAYS.

        One statement, so one snapshot on either database: a canary graded while this
        reads is in both counts or in neither, and the window never holds more than
        the total since the eval."""
        since = (now or utcnow()) - timedelta(days=CANARY_WINDOW_DAYS)
        window = (
            select(
                CanaryRunRow.capability.label("capability"),
                func.count().label("graded"),
                func.coalesce(func.sum(case((CanaryRunRow.passed, 1), else_=0)), 0).label("passed"),
            )
            .where(
                CanaryRunRow.agent_id == agent_id,
                CanaryRunRow.agent_version == agent_version,
                CanaryRunRow.record_eval_id == record_eval_id,
                CanaryRunRow.created_at >= since,
            )
            .group_by(CanaryRunRow.capability)
            .subquery()
        )
        with self._store.read() as session:
            rows = session.execute(
                select(CanaryStateRow, window.c.graded, window.c.passed)
                .outerjoin(window, window.c.capability == CanaryStateRow.capability)
                .where(
                    CanaryStateRow.agent_id == agent_id,
                    CanaryStateRow.agent_version == agent_version,
                    CanaryStateRow.record_eval_id == record_eval_id,
                )
            )
            return {
                state.capability: (record_canaries(state), int(graded or 0), int(passed or 0))
                for state, graded, passed in rows
            }

    def list(
        self, *, agent_id: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> Page[CanaryRun]:
        """Runs, newest first (the operator's: what canaries cost, apart from the ledger)."""
        after = decode_cursor(cursor)
        with self._store.read() as session:
            query = select(CanaryRunRow).order_by(
                CanaryRunRow.created_at.desc(), CanaryRunRow.id.desc()
            )
            if agent_id is not None:
                query = query.where(CanaryRunRow.agent_id == agent_id)
            if after is not None:
                at_text, _, run_id = after.partition("|")
                try:
                    at = datetime.fromisoformat(at_text)
                except ValueError:  # a caller's cursor: its bad text is the caller's 400
                    raise UsageError(f"not a valid cursor: {cursor!r}") from None
                query = query.where(
                    (CanaryRunRow.created_at < at)
                    | ((CanaryRunRow.created_at == at) & (CanaryRunRow.id < run_id))
                )
            rows = list(session.scalars(query.limit(limit + 1)))
        return page_of(
            [_run(r) for r in rows], limit, lambda run: f"{run.at.isoformat()}|{run.request_id}"
        )


def record_canaries(row: CanaryStateRow) -> RecordCanaries:
    """A drift test's row as the record of its eval shows it."""
    drift = None if row.drift is None else dict(row.drift)
    return RecordCanaries(drift is not None, row.graded, row.passed, row.drifted_at, drift)


def _run(row: CanaryRunRow) -> CanaryRun:
    return from_row(
        CanaryRun,
        row,
        request_id=row.id,
        outcome=row.outcome_code,
        cost_usd=Decimal(row.cost_usd),
        at=row.created_at,
    )


def _standing(row: CanaryStateRow) -> CanaryStanding:
    drift = None if row.drift is None else dict(row.drift)
    return from_row(CanaryStanding, row, state=dict(row.state), drift=drift)
