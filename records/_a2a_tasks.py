"""The A2A front door's tasks: written by the process that runs the call, read by any.

A task is its caller's: `get` finds it only for that caller, so another
caller's task id is indistinguishable from one that does not exist.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING, Any

from records._models import A2ATaskRow
from records._types import utcnow

if TYPE_CHECKING:
    from records._store import Store

__all__ = ["A2ATask", "A2ATaskRegistry"]

log = logging.getLogger(__name__)


class A2ATask:
    def __init__(self, row: A2ATaskRow) -> None:
        self.id = row.id
        self.caller = row.caller
        self.door = row.door
        self.state = row.state
        self.task = dict(row.task)
        self.created_at: datetime = row.created_at
        self.updated_at: datetime = row.updated_at


class A2ATaskRegistry:
    def __init__(self, store: Store) -> None:
        self._store = store

    def put(self, task_id: str, caller: str, door: str, state: str, task: dict[str, Any]) -> None:
        """Write the task (made, or moved to `state`) as it is now answered."""
        self.put_many([(task_id, caller, door, state, task)])

    def put_many(self, tasks: list[tuple[str, str, str, str, dict[str, Any]]]) -> None:
        """Several tasks' writes, in order, in one transaction (the gateway's batches)."""
        now = utcnow()
        with self._store.write() as session:
            for task_id, caller, door, state, task in tasks:
                row = session.get(A2ATaskRow, task_id)
                if row is None:
                    row = A2ATaskRow(id=task_id, caller=caller, door=door, created_at=now)
                    session.add(row)
                row.state = state
                row.task = task
                row.updated_at = now
                session.flush()  # a later write of the same task finds this one

    def get(self, task_id: str, caller: str) -> A2ATask | None:
        with self._store.read() as session:
            row = session.get(A2ATaskRow, task_id)
            if row is None or row.caller != caller:
                return None
            return A2ATask(row)
