"""The A2A door's tasks on SQLite and PostgreSQL: the caller's alone, kept for a bounded time."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text

from records import Store, utcnow
from records._a2a_tasks import RETENTION, SWEEP_EVERY

DOOR = "capability:ticket.classify"


def _task(state: str) -> dict[str, object]:
    return {"status": {"state": state}, "artifacts": [{"parts": [{"data": {"label": "x"}}]}]}


def _count(store: Store) -> int:
    with store.engine.connect() as conn:
        return int(conn.execute(text("SELECT count(*) FROM a2a_tasks")).scalar_one())


def test_a_task_is_its_callers_and_keeps_its_last_write(store: Store) -> None:
    store.a2a_tasks.put("t-1", "caller:a", DOOR, "TASK_STATE_WORKING", _task("WORKING"))
    store.a2a_tasks.put("t-1", "caller:a", DOOR, "TASK_STATE_COMPLETED", _task("COMPLETED"))
    task = store.a2a_tasks.get("t-1", "caller:a")
    assert task is not None and task.state == "TASK_STATE_COMPLETED"
    assert task.task == _task("COMPLETED")
    assert store.a2a_tasks.get("t-1", "caller:b") is None
    assert store.a2a_tasks.get("t-2", "caller:a") is None


def test_tasks_past_their_retention_are_gone_and_then_deleted(store: Store) -> None:
    start = utcnow()
    tasks = store.a2a_tasks

    def old(prefix: str) -> list[tuple[str, str, str, str, dict[str, object]]]:
        return [
            (f"{prefix}-{i}", "caller:a", DOOR, "TASK_STATE_COMPLETED", _task("C"))
            for i in range(5)
        ]

    tasks.put_many(old("a"), now=start)  # this process's first write sweeps (nothing to delete)
    later = start + RETENTION + timedelta(seconds=1)
    # Past its retention a task is not found, even before a sweep has deleted it.
    assert tasks.get("a-0", "caller:a", now=start + RETENTION) is not None
    assert tasks.get("a-0", "caller:a", now=later) is None
    # A write after SWEEP_EVERY deletes what is past its retention, and only that.
    tasks.put("new-0", "caller:a", DOOR, "TASK_STATE_WORKING", _task("W"), now=later)
    assert _count(store) == 1
    # Within SWEEP_EVERY of that sweep no write scans the table again: tasks past their
    # retention stay (unreadable) until the next sweep.
    tasks.put_many(old("b"), now=start)
    tasks.put("new-1", "caller:a", DOOR, "TASK_STATE_WORKING", _task("W"), now=later)
    assert _count(store) == 7
    assert tasks.get("b-0", "caller:a", now=later) is None
    tasks.put("new-2", "caller:a", DOOR, "TASK_STATE_WORKING", _task("W"), now=later + SWEEP_EVERY)
    assert _count(store) == 3
    assert tasks.get("new-0", "caller:a", now=later + SWEEP_EVERY) is not None
