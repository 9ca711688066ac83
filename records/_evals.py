"""Eval runs and their cells: creation, leases with fencing, results, records.

Every cell ends with exactly one recorded outcome: a claim takes the cell
(`pending`, or `running` with an expired lease) and bumps its fence; a
result is written only `WHERE status = 'running' AND fence = <the claim's>`,
so a worker that lost its lease records nothing. PostgreSQL claims with
`FOR UPDATE SKIP LOCKED`, so many workers split one eval without waiting on
each other; SQLite serialises writers (BEGIN IMMEDIATE) to the same effect.

The values it gives are in records._eval_values; the reads of agents' current
records (`current_record`, `current_record_with_staleness`, ...) are inherited
from records._current, beside the staleness rule they apply.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import fields, replace
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

from sqlalchemy import (
    Integer,
    delete,
    func,
    null,
    select,
    update,
)
from sqlalchemy.orm import Session
from sqlalchemy.sql.dml import Update

from records._agent_record import AgentRecord
from records._cell_sql import (
    CLAIM_POSTGRESQL,
    CLAIM_SQLITE,
    RECORD,
    RELEASE,
    STATUS_FOR_CLAIM,
    held_fences,
    insert_cells,
    record_sqlite,
)
from records._certificate_registry import Certify
from records._current import CurrentRecords
from records._eval_search import EvalSearch
from records._eval_values import (
    CellResultRow,
    CellSpec,
    ClaimedCell,
    EvalInfo,
    ReportCell,
    ScoredCell,
    Settled,
    eval_info,
)
from records._exposure import ExposureSpend, SpentUnit, refund_unclaimed, spend_all
from records._models import (
    AgentRecordRow,
    EvalCell,
    EvalReportRow,
    EvalRun,
    SuiteVersionRow,
)
from records._pages import Page, check_limit, decode_cursor, page_of
from records._statuses import CellStatus, EvalStatus
from records._suites import count_due, new_epoch
from records._types import utcnow
from schema.errors import NotFound, Refused

__all__ = ["EvalRegistry"]

# The plain-row views of a cell: each field names the column it is read from.
_Cell = TypeVar("_Cell", ReportCell, ScoredCell)


def _held(eval_id: str, idx: int, fence: int) -> Update:
    """An update of one running cell that only its holder makes: the fence it claimed it
    with is still the cell's (a claimant whose lease was taken over changes nothing)."""
    return update(EvalCell).where(
        EvalCell.eval_id == eval_id,
        EvalCell.idx == idx,
        EvalCell.fence == fence,
        EvalCell.status == CellStatus.RUNNING,
    )


class EvalRegistry(CurrentRecords, EvalSearch):
    # -- lifecycle ----------------------------------------------------------

    def create(
        self,
        *,
        eval_id: str,
        agent_id: str,
        agent_version: str,
        plan: dict[str, Any],
        plan_digest: str,
        full_plan: bool,
        cells: Iterable[CellSpec],
        cells_total: int | None = None,
        exposure: Sequence[ExposureSpend] = (),
    ) -> EvalInfo:
        """The run and every cell, pending, in one transaction, which also takes one unit
        of each holdout exposure budget in `exposure` and keeps it beside the eval
        (Refused, and nothing written, when one is spent)."""
        if cells_total is None:  # a list, not a stream of cells: counted here
            cells = list(cells)
            cells_total = len(cells)
        now = utcnow()
        with self._store.write() as session:
            run = EvalRun(
                id=eval_id,
                agent_id=agent_id,
                agent_version=agent_version,
                plan=plan,
                plan_digest=plan_digest,
                full_plan=full_plan,
                status=EvalStatus.RUNNING,
                cells_total=cells_total,
                created_at=now,
                finished_at=None,
                result=None,
            )
            session.add(run)
            session.flush()
            inserted = insert_cells(session, eval_id, cells, self._store.dialect)
            if inserted != cells_total:
                raise ValueError(f"{inserted} cells made, {cells_total} counted")
            spend_all(session, eval_id, exposure)
            return eval_info(run)

    def get(self, eval_id: str) -> EvalInfo:
        with self._store.read() as session:
            row = session.get(EvalRun, eval_id)
            if row is None:
                raise NotFound(f"no eval {eval_id!r}", details={"eval": eval_id})
            return eval_info(row)

    def running_of_org(self, org: str) -> int:
        """How many evals of the org's agents are running."""
        with self._store.read() as session:
            query = select(func.count()).where(
                EvalRun.status == EvalStatus.RUNNING,
                EvalRun.agent_id.startswith(f"{org}/", autoescape=True),
            )
            return int(session.execute(query).scalar_one())

    def list(
        self, *, agent_id: str | None = None, cursor: str | None = None, limit: int = 50
    ) -> Page[EvalInfo]:
        """Newest first (ids are time-ordered ULIDs)."""
        check_limit(limit)
        before = decode_cursor(cursor)
        with self._store.read() as session:
            query = select(EvalRun).order_by(EvalRun.id.desc())
            if agent_id is not None:
                query = query.where(EvalRun.agent_id == agent_id)
            if before is not None:
                query = query.where(EvalRun.id < before)
            rows = list(session.scalars(query.limit(limit + 1)))
            return page_of([eval_info(r) for r in rows], limit, lambda info: info.id)

    def cancel(self, eval_id: str) -> tuple[EvalInfo, builtins.list[SpentUnit]]:
        """Stop a running eval, and give back in the same transaction each holdout unit it
        spent on a suite none of whose holdout cells was ever claimed; the eval and every
        unit it spent (`refunded_at` says which came back).

        The one way out of `running` but finishing: the status changes under the row's
        lock and only from `running`, so of two cancels one refunds and the other is
        Refused, and no later cancel refunds again."""
        with self._store.write() as session:
            row = session.get(EvalRun, eval_id, with_for_update=True)
            if row is None:
                raise NotFound(f"no eval {eval_id!r}", details={"eval": eval_id})
            if row.status != EvalStatus.RUNNING:
                raise Refused(
                    f"eval {eval_id} is {row.status}, not running",
                    details={"eval": eval_id, "status": row.status},
                )
            row.status = EvalStatus.CANCELLED
            units = refund_unclaimed(session, eval_id)
            return eval_info(row), units

    # -- cells --------------------------------------------------------------

    def counts(self, eval_id: str, *, split: str | None = None) -> dict[str, int]:
        """Cells by status (of one split, when given)."""
        with self._store.read() as session:
            query = select(EvalCell.status, func.count()).where(EvalCell.eval_id == eval_id)
            if split is not None:
                query = query.where(EvalCell.split == split)
            rows = session.execute(query.group_by(EvalCell.status))
            counts: dict[str, int] = dict.fromkeys(CellStatus, 0)
            counts.update({status: n for status, n in rows})
            return counts

    def progress(self, eval_id: str, *, split: str | None = None) -> dict[str, Any]:
        """Done cells, passes and spend so far (of one split, when given), for progress
        bars and `evals status`."""
        where = [EvalCell.eval_id == eval_id, EvalCell.status == CellStatus.DONE]
        if split is not None:
            where.append(EvalCell.split == split)
        with self._store.read() as session:
            done, passed = session.execute(
                select(func.count(), func.coalesce(func.sum(_as_int(EvalCell.passed)), 0)).where(
                    *where
                )
            ).one()
            costs = session.scalars(select(EvalCell.cost_usd).where(*where))
            spent = sum((Decimal(c) for c in costs if c), Decimal(0))
            # Text, as every money field in a view (JSON would carry a number as a float).
            return {"done": int(done), "passed": int(passed), "cost_usd": str(spent)}

    def claim(
        self, eval_id: str, owner: str, limit: int, lease_s: float
    ) -> builtins.list[ClaimedCell]:
        """Take up to `limit` claimable cells under a lease; each claim bumps the fence.
        Nothing once the eval is no longer running (`record_and_claim`'s rule).

        One statement: UPDATE … WHERE idx IN (SELECT … LIMIT n [FOR UPDATE SKIP
        LOCKED]) RETURNING …, so a claim holds the write lock for as short a time
        as it can.
        """
        with self._store.write() as session:
            if self._status_for_claim(session, eval_id) != EvalStatus.RUNNING:
                return []
            return self._claim(session, eval_id, owner, limit, lease_s)

    def _status_for_claim(self, session: Session, eval_id: str) -> EvalStatus:
        """The eval's status, read as a claim must read it (STATUS_FOR_CLAIM)."""
        status = session.connection().execute(STATUS_FOR_CLAIM, {"b_eval": eval_id}).scalar()
        if status is None:
            raise NotFound(f"no eval {eval_id!r}", details={"eval": eval_id})
        return EvalStatus(status)

    def _claim(
        self, session: Session, eval_id: str, owner: str, limit: int, lease_s: float
    ) -> builtins.list[ClaimedCell]:
        now = utcnow()
        statement = CLAIM_POSTGRESQL if self._store.dialect == "postgresql" else CLAIM_SQLITE
        parameters = {
            "b_eval": eval_id,
            "b_now": now,
            "b_limit": limit,
            "b_owner": owner,
            "b_expires": now + timedelta(seconds=lease_s),
        }
        rows = sorted(session.connection().execute(statement, parameters), key=lambda row: row[0])
        # A fence past 1 means an earlier claim of this cell did not record.
        return [
            ClaimedCell(
                idx=row[0],
                fence=row[1],
                suite_id=row[2],
                suite_version=row[3],
                split=row[4],
                case_id=row[5],
                repetition=row[6],
                request_id=row[7],
                reclaimed=row[1] > 1,
            )
            for row in rows
        ]

    def renew(self, eval_id: str, owner: str, fences: dict[int, int], lease_s: float) -> int:
        """Heartbeat: extend this owner's leases that it still holds; how many it holds."""
        if not fences:
            return 0
        expires = utcnow() + timedelta(seconds=lease_s)
        held = 0
        with self._store.write() as session:
            for idx, fence in fences.items():
                result = session.execute(
                    _held(eval_id, idx, fence).values(lease_expires_at=expires)
                )
                held += result.rowcount  # type: ignore[attr-defined]
        return held

    def expire_leases(self, eval_id: str, owners: Iterable[str]) -> int:
        """Make the leases of dead owners claimable now (a crashed local process)."""
        owners = list(owners)
        if not owners:
            return 0
        with self._store.write() as session:
            result = session.execute(
                update(EvalCell)
                .where(
                    EvalCell.eval_id == eval_id,
                    EvalCell.status == CellStatus.RUNNING,
                    EvalCell.lease_owner.in_(owners),
                )
                .values(lease_expires_at=utcnow() - timedelta(seconds=1))
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def running_owners(self, eval_id: str) -> builtins.list[str]:
        with self._store.read() as session:
            rows = session.scalars(
                select(EvalCell.lease_owner)
                .where(EvalCell.eval_id == eval_id, EvalCell.status == CellStatus.RUNNING)
                .distinct()
            )
            return [r for r in rows if r]

    def record(
        self, eval_id: str, results: Sequence[CellResultRow], *, owner: str | None = None
    ) -> builtins.list[int]:
        """Write results in one transaction; only still-held claims record. Returns their idxs.

        The claims still held are read first (locked on PostgreSQL; SQLite's
        writer lock covers the transaction), then one executemany UPDATE
        writes them: an order of magnitude cheaper than a statement per cell.
        """
        if not results:
            return []
        with self._store.write() as session:
            return self._record(session, eval_id, results, owner)

    def record_and_claim(
        self,
        eval_id: str,
        results: Sequence[CellResultRow],
        *,
        owner: str,
        claim: int,
        lease_s: float,
        wait_s: float | None = None,
    ) -> Settled | None:
        """A runner's group commit: record `results`, then claim up to `claim` more cells.

        One write transaction instead of two, and the eval's status read in
        it: a runner learns of `holon evals cancel` without a query of its
        own, and claims nothing once the eval is no longer running.

        `wait_s` (SQLite only) bounds the wait for the write lock: if another
        writer holds it that long, nothing is done and None comes back, so a
        caller on an event loop can go on and retry from a thread instead.
        """

        def settle(session: Session) -> Settled:
            # Core statements on the session's connection: the ORM's execution
            # layer (a third of a small statement's cost) has nothing to add.
            status = self._status_for_claim(session, eval_id)
            recorded = self._record(session, eval_id, results, owner) if results else []
            claimed: builtins.list[ClaimedCell] = []
            if claim > 0 and status == EvalStatus.RUNNING:
                claimed = self._claim(session, eval_id, owner, claim, lease_s)
            return Settled(recorded, claimed, status)

        if wait_s is not None:
            return self._store.write_within(wait_s, settle)
        with self._store.write() as session:
            return settle(session)

    def _record(
        self,
        session: Session,
        eval_id: str,
        results: Sequence[CellResultRow],
        owner: str | None,
    ) -> builtins.list[int]:
        now = utcnow()
        held = held_fences(session, eval_id, [r.idx for r in results], self._store.dialect)
        mine = [r for r in results if held.get(r.idx) == r.fence]
        if mine and self._store.dialect == "sqlite":
            record_sqlite(session, eval_id, mine, owner, now)
        elif mine:
            session.execute(
                RECORD.values(recorded_by=owner, finished_at=now),
                [
                    {
                        "b_eval": eval_id,
                        "b_idx": r.idx,
                        "b_code": r.outcome_code,
                        "b_passed": r.passed,
                        "b_cost": r.cost_usd,
                        "b_latency": r.latency_ms,
                        "b_attempts": r.attempts,
                        "b_outcome": r.outcome,
                        "b_output": r.output,
                        "b_checks": r.checks,
                    }
                    for r in mine
                ],
            )
        return [r.idx for r in mine]

    def release_many(self, eval_id: str, fences: dict[int, int]) -> int:
        """Give back claimed cells never started (a runner stopping): pending again."""
        if not fences:
            return 0
        with self._store.write() as session:
            result = session.execute(
                RELEASE,
                [{"b_eval": eval_id, "b_idx": idx, "b_fence": f} for idx, f in fences.items()],
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def release(self, eval_id: str, idx: int, fence: int) -> bool:
        """Give a claimed cell back (an infrastructure failure): pending again, not recorded."""
        with self._store.write() as session:
            result = session.execute(
                _held(eval_id, idx, fence).values(
                    status=CellStatus.PENDING, lease_owner=None, lease_expires_at=None
                )
            )
            return bool(result.rowcount)  # type: ignore[attr-defined]

    def running(self) -> builtins.list[EvalInfo]:
        """Evals still running, oldest first: what `holon worker` helps with."""
        with self._store.read() as session:
            rows = session.scalars(
                select(EvalRun).where(EvalRun.status == EvalStatus.RUNNING).order_by(EvalRun.id)
            )
            return [eval_info(r) for r in rows]

    def drop_outputs(self, older_than: datetime) -> int:
        """Retention: forget agent outputs recorded before `older_than`; grades stay.
        The kept reports of the evals it touches go too (they show those outputs)."""
        dropped = (
            select(EvalCell.eval_id)
            .where(EvalCell.finished_at < older_than, EvalCell.output.is_not(None))
            .distinct()
        )
        with self._store.write() as session:
            session.execute(delete(EvalReportRow).where(EvalReportRow.eval_id.in_(dropped)))
            result = session.execute(
                update(EvalCell)
                .where(EvalCell.finished_at < older_than, EvalCell.output.is_not(None))
                .values(output=None)
            )
            return int(result.rowcount)  # type: ignore[attr-defined]

    def cells(self, eval_id: str) -> builtins.list[EvalCell]:
        """Every cell of the eval, in order (detached rows, for reports)."""
        query = select(EvalCell).where(EvalCell.eval_id == eval_id).order_by(EvalCell.idx)
        with self._store.read() as session:
            return list(session.scalars(query))

    def report_cells(
        self,
        eval_id: str,
        *,
        after: int = -1,
        limit: int | None = None,
        suite_id: str | None = None,
    ) -> builtins.list[ReportCell]:
        """The eval's cells in order, as a report reads them: the columns it shows. A page
        of them with `after` (the last idx read) and `limit`, of one suite with `suite_id`:
        a report reads its cells in pages of the primary key (eval_id, idx), so it never
        holds them all (evals.reports._data.stored_cells)."""
        c = EvalCell.__table__.c
        query = select(*(c[field.name] for field in fields(ReportCell)))
        query = query.where(c.eval_id == eval_id, c.idx > after)
        if suite_id is not None:
            query = query.where(c.suite_id == suite_id)
        query = query.order_by(c.idx).limit(limit)
        with self._store.read() as session:
            return [ReportCell(*row) for row in session.execute(query)]

    def cell_state(self, eval_id: str) -> tuple[int, int, int, datetime | None]:
        """What changes when any cell of the eval changes, in one aggregate: how many cells,
        how many still hold an output (retention drops them), the sum of their fences
        (every claim raises one) and the last finish. A cached report of a finished eval
        is keyed by it (evals.reports.ReportCache)."""
        c = EvalCell.__table__.c
        query = select(
            func.count(),
            func.count(c.output),
            func.coalesce(func.sum(c.fence), 0),
            func.max(c.finished_at),
        ).where(c.eval_id == eval_id)
        with self._store.read() as session:
            n, outputs, fences, last = session.execute(query).one()
        return int(n), int(outputs), int(fences), last

    def report_cells_between(
        self,
        eval_id: str,
        *,
        splits: Sequence[str],
        after: int | None = None,
        before: int | None = None,
        limit: int,
        output: bool = True,
    ) -> builtins.list[ReportCell]:
        """At most `limit` cells of the eval in `splits`, as `report_cells` reads them: those
        after `after` in order, or (`before` given) those before it, nearest first. A keyset
        read: a page of a long eval costs its own rows, not the cells before it.
        `output=False` reads no output (None in its place): a listing shows none, and
        decoding outputs is most of a read."""
        c = EvalCell.__table__.c
        columns = [
            c[f.name] if output or f.name != "output" else null().label("output")
            for f in fields(ReportCell)
        ]
        query = select(*columns).where(c.eval_id == eval_id, c.split.in_(list(splits)))
        if before is not None:
            query = query.where(c.idx < before).order_by(c.idx.desc())
        else:
            query = query.where(c.idx > (-1 if after is None else after)).order_by(c.idx)
        with self._store.read() as session:
            return [ReportCell(*row) for row in session.execute(query.limit(limit))]

    def scored_cells(self, eval_id: str) -> builtins.list[ScoredCell]:
        """Every cell of the eval, in order, as scoring reads it (no JSON column)."""
        return self._cell_rows(eval_id, ScoredCell)

    def scored_cell_pages(self, eval_id: str, page: int = 5000) -> Iterator[ScoredCell]:
        """`scored_cells` read `page` at a time by the primary key (eval_id, idx): finishing
        an eval of any size holds one page of it."""
        c = EvalCell.__table__.c
        columns = [c[field.name] for field in fields(ScoredCell)]
        after = -1
        while True:
            query = (
                select(*columns)
                .where(c.eval_id == eval_id, c.idx > after)
                .order_by(c.idx)
                .limit(page)
            )
            with self._store.read() as session:
                rows = [ScoredCell(*row) for row in session.execute(query)]
            yield from rows
            if len(rows) < page:
                return
            after = rows[-1].idx

    def _cell_rows(self, eval_id: str, shape: type[_Cell]) -> builtins.list[_Cell]:
        """Every cell of the eval, in order, as plain rows of the columns `shape`'s fields
        name: ORM objects of every column cost twice the read, half of it building the
        objects (CHANGELOG.md, "Performance work"); building them was most of the cost of
        finishing an eval."""
        c = EvalCell.__table__.c
        columns = [c[field.name] for field in fields(shape)]
        query = select(*columns).where(c.eval_id == eval_id).order_by(c.idx)
        with self._store.read() as session:
            return [shape(*row) for row in session.execute(query)]

    # -- finishing and records ----------------------------------------------

    def finish(
        self,
        eval_id: str,
        *,
        result: dict[str, Any],
        record: AgentRecord | None,
        rotate: Sequence[tuple[str, int, int | None, int]] = (),
        certify: Certify | None = None,
    ) -> EvalInfo:
        """Mark done, store the result and (a full plan) the record and its certificate,
        count the eval against each suite's holdout epoch: all in one transaction."""
        now = utcnow()
        with self._store.write() as session:
            run = session.get(EvalRun, eval_id, with_for_update=True)
            if run is None:
                raise NotFound(f"no eval {eval_id!r}")
            if run.status == EvalStatus.DONE:
                return eval_info(run)
            run.status = EvalStatus.DONE
            run.finished_at = now
            run.result = result
            if record is not None:
                if certify is not None:
                    # Signed in the record's transaction: a record never lacks its certificate.
                    record = replace(
                        record,
                        certificate_id=self._store.certificates.issue_in(session, certify, now=now),
                    )
                    run.result = {**result, "record": record.to_json()}
                session.add(
                    AgentRecordRow(
                        eval_id=eval_id,
                        agent_id=run.agent_id,
                        agent_version=run.agent_version,
                        eval_created_at=run.created_at,
                        record=record.to_json(),
                        created_at=now,
                    )
                )
            for suite_id, version, rotate_after, min_hours in rotate:
                row = session.get(SuiteVersionRow, (suite_id, version), with_for_update=True)
                if row is None:
                    continue
                row.evals_in_epoch += 1
                if count_due(
                    row.evals_in_epoch, rotate_after, row.epoch_started_at, min_hours, now
                ):
                    new_epoch(row, now)
            return eval_info(run)


def _as_int(column: Any) -> Any:
    from sqlalchemy import cast

    return cast(column, Integer)
