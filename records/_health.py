"""What a deployment check reads of the store: the database's clock, and the evals
nobody is working (docs/deploy.md, "Checking a deployment").

Leases and budget periods are decided on the database's clock on PostgreSQL and on
each process's own otherwise, so a host whose clock is off from the database's
misjudges leases; and a running eval with cells left and no live lease has no
worker (every worker died, or none was started).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import func, select, text

from records._models import EvalCell, EvalRun
from records._statuses import CellStatus, EvalStatus
from records._types import utcnow

if TYPE_CHECKING:
    from records._store import Store

__all__ = ["StoreHealth", "Unattended"]


@dataclass(frozen=True)
class Unattended:
    """A running eval with cells left that no worker holds a live lease on."""

    eval_id: str
    agent_id: str
    cells_left: int
    created_at: datetime


class StoreHealth:
    def __init__(self, store: Store) -> None:
        self._store = store

    def clock_skew_s(self) -> float | None:
        """This process's clock minus the database's, in seconds (None: SQLite, whose
        clock is this process's own)."""
        if self._store.dialect != "postgresql":
            return None
        with self._store.read() as session:
            before = utcnow()
            theirs: datetime = session.execute(text("SELECT clock_timestamp()")).scalar_one()
            after = utcnow()
        ours = before + (after - before) / 2
        return (ours - theirs).total_seconds()

    def unattended(self, *, older_than: timedelta, limit: int = 20) -> Sequence[Unattended]:
        """Running evals at least `older_than` old with cells left and no live lease."""
        now = utcnow()
        left = (
            select(EvalCell.eval_id, func.count().label("left"))
            .where(EvalCell.status != CellStatus.DONE)
            .group_by(EvalCell.eval_id)
            .subquery()
        )
        live = select(EvalCell.eval_id).where(
            EvalCell.status == CellStatus.RUNNING, EvalCell.lease_expires_at > now
        )
        query = (
            select(EvalRun.id, EvalRun.agent_id, left.c.left, EvalRun.created_at)
            .join(left, left.c.eval_id == EvalRun.id)
            .where(
                EvalRun.status == EvalStatus.RUNNING,
                EvalRun.created_at <= now - older_than,
                EvalRun.id.not_in(live),
            )
            .order_by(EvalRun.id)
            .limit(limit)
        )
        with self._store.read() as session:
            return [Unattended(*row) for row in session.execute(query)]
