"""The statements that claim, record and release an eval's cells, built once.

A runner issues them at every group commit: built and compiled once, they
cost SQLAlchemy a cache lookup per use instead of a statement construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING, Any

from sqlalchemy import Integer, Table, and_, bindparam, or_, select, union_all
from sqlalchemy.orm import Session

from records._models import EvalCell, EvalRun
from records._statuses import CellStatus
from records._types import UTCDateTime

if TYPE_CHECKING:
    from records._eval_values import CellResultRow, CellSpec

CELLS: Table = EvalCell.__table__  # type: ignore[assignment]
# Built once: the per-commit statements differ only in their parameters.
RECORD = (
    CELLS.update()
    .where(CELLS.c.eval_id == bindparam("b_eval"), CELLS.c.idx == bindparam("b_idx"))
    .values(
        status=CellStatus.DONE,
        lease_owner=None,
        lease_expires_at=None,
        outcome_code=bindparam("b_code"),
        passed=bindparam("b_passed"),
        cost_usd=bindparam("b_cost"),
        latency_ms=bindparam("b_latency"),
        attempts=bindparam("b_attempts"),
        outcome=bindparam("b_outcome"),
        output=bindparam("b_output"),
        checks=bindparam("b_checks"),
    )
)
RELEASE = (
    CELLS.update()
    .where(
        CELLS.c.eval_id == bindparam("b_eval"),
        CELLS.c.idx == bindparam("b_idx"),
        CELLS.c.fence == bindparam("b_fence"),
        CELLS.c.status == CellStatus.RUNNING,
    )
    .values(status=CellStatus.PENDING, lease_owner=None, lease_expires_at=None)
)


# The status a claim goes by, read under a share lock on PostgreSQL (SQLite's
# writer lock covers the transaction): a cancel, which locks the eval's row for
# update, then either waits for the claim and sees its fences, or goes first and
# the claim reads `cancelled` and claims nothing. So no holdout cell is claimed
# after a cancel found none claimed and refunded the holdout budget.
STATUS_FOR_CLAIM = (
    select(EvalRun.status).where(EvalRun.id == bindparam("b_eval")).with_for_update(read=True)
)


def _claim_statement(picked: Any) -> Any:
    """UPDATE the picked cells to running under the claim's lease, bumping their fences."""
    return (
        CELLS.update()
        .where(CELLS.c.eval_id == bindparam("b_eval"), CELLS.c.idx == picked.c.idx)
        .values(
            status=CellStatus.RUNNING,
            lease_owner=bindparam("b_owner"),
            lease_expires_at=bindparam("b_expires", type_=UTCDateTime()),
            fence=CELLS.c.fence + 1,
        )
        .returning(
            CELLS.c.idx,
            CELLS.c.fence,
            CELLS.c.suite_id,
            CELLS.c.suite_version,
            CELLS.c.split,
            CELLS.c.case_id,
            CELLS.c.repetition,
            CELLS.c.request_id,
        )
    )


def _claimable(*conditions: Any) -> Any:
    return (
        select(CELLS.c.idx)
        .where(CELLS.c.eval_id == bindparam("b_eval"), *conditions)
        .order_by(CELLS.c.idx)
        .limit(bindparam("b_limit", type_=Integer()))
    )


_EXPIRED = (
    CELLS.c.status == CellStatus.RUNNING,
    CELLS.c.lease_expires_at < bindparam("b_now", type_=UTCDateTime()),
)
# One statement per claim: UPDATE … WHERE idx IN (the first `limit` claimable
# cells) RETURNING …, so a claim holds the write lock as briefly as it can. A
# CTE, not `IN (subquery)`: PostgreSQL may evaluate an IN subquery with LIMIT
# more than once and so claim more than `limit` cells. PostgreSQL skips rows
# other workers have locked (SKIP LOCKED, which a UNION cannot carry).
CLAIM_POSTGRESQL = _claim_statement(
    _claimable(or_(CELLS.c.status == CellStatus.PENDING, and_(*_EXPIRED)))
    .with_for_update(skip_locked=True)
    .cte("picked")
)
# SQLite: two index walks (eval_id, status, idx), pending and expired
# leases, each stopping after `limit` rows; an OR of the two would scan
# every done cell of the eval at every claim.
_pending = _claimable(CELLS.c.status == CellStatus.PENDING).subquery("pending")
_expired = _claimable(*_EXPIRED).subquery("expired")
CLAIM_SQLITE = _claim_statement(
    union_all(select(_pending.c.idx), select(_expired.c.idx))
    .order_by("idx")
    .limit(bindparam("b_limit", type_=Integer()))
    .cte("picked")
)

# The same UPDATE as RECORD, for SQLite's DB-API (qmark) directly: a group
# commit's rows skip SQLAlchemy's per-row parameter handling, and go through
# the columns' own bind processors, so the stored text is the same.
RECORD_SQLITE = (
    "UPDATE eval_cells SET status = 'done', lease_owner = NULL, lease_expires_at = NULL, "
    "outcome_code = ?, passed = ?, cost_usd = ?, latency_ms = ?, attempts = ?, outcome = ?, "
    "output = ?, checks = ?, recorded_by = ?, finished_at = ? WHERE eval_id = ? AND idx = ?"
)


# The cells of a new eval, pending (SQLite's DB-API; bench/eval's 2,000 cells took the Core
# insert's per-row parameter processing about as long as SQLite's own work).
INSERT_SQLITE = (
    "INSERT INTO eval_cells (eval_id, idx, suite_id, suite_version, split, case_id, "
    "case_digest, repetition, tags, request_id, status, fence, attempts) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, 0)"
)


# Which of a group commit's cells are still `running`, with their fences (SQLite's
# DB-API, one mark per cell).
HELD_SQLITE = (
    "SELECT idx, fence FROM eval_cells WHERE eval_id = ? AND status = 'running' "
    "AND idx IN ({marks})"
)


def held_fences(
    session: Session, eval_id: str, indexes: Sequence[int], dialect: str
) -> dict[int, int]:
    """The fences of those of the cells still `running` (on PostgreSQL, locked for the
    recording that follows): a result is recorded only under its claim's fence."""
    connection = session.connection()
    if dialect == "sqlite":
        # The DB-API directly: building and compiling the IN list's select was
        # most of this statement's cost at every group commit.
        marks = ", ".join("?" * len(indexes))
        sql = HELD_SQLITE.format(marks=marks)
        rows = connection.exec_driver_sql(sql, (eval_id, *indexes))
        return {idx: fence for idx, fence in rows}
    query = select(CELLS.c.idx, CELLS.c.fence).where(
        CELLS.c.eval_id == eval_id,
        CELLS.c.idx.in_(indexes),
        CELLS.c.status == CellStatus.RUNNING,
    )
    return {idx: fence for idx, fence in connection.execute(query.with_for_update())}


_INSERT_BATCH = 500  # cells an executemany


def insert_cells(session: Session, eval_id: str, cells: Iterable[CellSpec], dialect: str) -> int:
    """The eval's cells, pending, in the caller's transaction, in batches (an eval of any
    size is never held whole); how many were written."""
    written = 0
    cells = iter(cells)
    connection = session.connection()
    tags = _processor(CELLS.c.tags, connection.dialect)
    while batch := list(islice(cells, _INSERT_BATCH)):
        written += len(batch)
        if dialect != "sqlite":
            # Core, not the ORM's bulk insert: the same executemany without the
            # per-row bookkeeping of mapped objects.
            session.execute(
                CELLS.insert(),
                [
                    {
                        "eval_id": eval_id,
                        "idx": c.idx,
                        "suite_id": c.suite_id,
                        "suite_version": c.suite_version,
                        "split": c.split,
                        "case_id": c.case_id,
                        "case_digest": c.case_digest,
                        "repetition": c.repetition,
                        "tags": c.tags,
                        "request_id": c.request_id,
                        "status": CellStatus.PENDING,
                        "fence": 0,
                        "attempts": 0,
                    }
                    for c in batch
                ],
            )
            continue
        connection.exec_driver_sql(
            INSERT_SQLITE,
            [
                (
                    eval_id,
                    c.idx,
                    c.suite_id,
                    c.suite_version,
                    c.split,
                    c.case_id,
                    c.case_digest,
                    c.repetition,
                    tags(c.tags),
                    c.request_id,
                )
                for c in batch
            ],
        )
    return written


def _processor(column: Any, dialect: Any) -> Any:
    """The column type's own bind processor (so the row is what the ORM would write)."""
    process = column.type._cached_bind_processor(dialect)
    return process if process is not None else (lambda value: value)


def record_sqlite(
    session: Session,
    eval_id: str,
    rows: Sequence[CellResultRow],
    owner: str | None,
    now: datetime,
) -> None:
    connection = session.connection()
    dialect = connection.dialect
    columns = CELLS.c
    passed, outcome, output, checks = (
        _processor(columns[name], dialect) for name in ("passed", "outcome", "output", "checks")
    )
    finished = _processor(columns.finished_at, dialect)(now)
    connection.exec_driver_sql(
        RECORD_SQLITE,
        [
            (
                r.outcome_code,
                passed(r.passed),
                r.cost_usd,
                r.latency_ms,
                r.attempts,
                outcome(r.outcome),
                output(r.output),
                checks(r.checks),
                owner,
                finished,
                eval_id,
                r.idx,
            )
            for r in rows
        ],
    )
