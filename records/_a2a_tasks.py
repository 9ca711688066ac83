"""The A2A front door's tasks: written by the process that runs the call, read by any.

A task is its caller's: `get` finds it only for that caller, so another
caller's task id is indistinguishable from one that does not exist.

Tasks are kept for `RETENTION` after their last write, then deleted: each
holds its call's output (up to the body bound), and a caller whose budget
allows many cheap calls would otherwise grow the table without end. The
ledger row of the call stays; only the door's copy of the answer goes.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete

from records._models import A2ATaskRow
from records._registry import Registry
from records._types import utcnow

if TYPE_CHECKING:
    from records._store import Store

__all__ = ["RETENTION", "A2ATask", "A2ATaskRegistry"]

log = logging.getLogger(__name__)

# A polling client reads a task within minutes; a week leaves room for one that
# comes back after a weekend, and bounds what the table holds.
RETENTION = timedelta(days=7)
# The sweep scans the table (updated_at has no index), so a process runs it at
# most this often, on a write, not on every task made.
SWEEP_EVERY = timedelta(minutes=10)


class A2ATask:
    def __init__(self, row: A2ATaskRow) -> None:
        self.id = row.id
        self.caller = row.caller
        self.door = row.door
        self.state = row.state
        self.task = dict(row.task)
        self.created_at: datetime = row.created_at
        self.updated_at: datetime = row.updated_at


class A2ATaskRegistry(Registry):
    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._lock = threading.Lock()
        self._swept_at: datetime | None = None

    def put(
        self,
        task_id: str,
        caller: str,
        door: str,
        state: str,
        task: dict[str, Any],
        now: datetime | None = None,
    ) -> None:
        """Write the task (made, or moved to `state`) as it is now answered."""
        self.put_many([(task_id, caller, door, state, task)], now)

    def put_many(
        self, tasks: list[tuple[str, str, str, str, dict[str, Any]]], now: datetime | None = None
    ) -> None:
        """Several tasks' writes, in order, in one transaction (the gateway's batches)."""
        now = now or utcnow()
        with self._store.write() as session:
            if self._sweep_due(now):
                gone = session.execute(
                    delete(A2ATaskRow).where(A2ATaskRow.updated_at < now - RETENTION)
                )
                count = int(gone.rowcount)  # type: ignore[attr-defined]
                if count:
                    log.info("deleted %d A2A tasks older than %s", count, RETENTION)
            for task_id, caller, door, state, task in tasks:
                row = session.get(A2ATaskRow, task_id)
                if row is None:
                    row = A2ATaskRow(id=task_id, caller=caller, door=door, created_at=now)
                    session.add(row)
                row.state = state
                row.task = task
                row.updated_at = now
                session.flush()  # a later write of the same task finds this one

    def get(self, task_id: str, caller: str, now: datetime | None = None) -> A2ATask | None:
        """The caller's task, or None (unknown, another caller's, or past its retention)."""
        with self._store.read() as session:
            row = session.get(A2ATaskRow, task_id)
            if row is None or row.caller != caller:
                return None
            if row.updated_at < (now or utcnow()) - RETENTION:
                return None  # not swept yet, but gone all the same
            return A2ATask(row)

    def _sweep_due(self, now: datetime) -> bool:
        with self._lock:
            if self._swept_at is not None and now - self._swept_at < SWEEP_EVERY:
                return False
            self._swept_at = now
            return True
