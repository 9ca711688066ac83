"""Group commit: one thread applies every write queued since its last commit, together.

At hundreds of writes a second, one transaction per write means hundreds of
commits (and, on SQLite, writers sleeping in the busy handler while another
holds the lock); a group commit turns them into a few dozen, and each
writer still waits for its own write to be committed (its future).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)

__all__ = ["GroupCommit"]

W = TypeVar("W")

# Writes per group commit: bounds one transaction's length (and lock time).
MAX_BATCH = 256
# The thread exits after this long without work (started again on demand).
IDLE_S = 2.0


class GroupCommit(Generic[W]):
    """One thread that applies every write queued since its last commit, in one transaction.

    If a group's transaction fails as a whole (e.g. a duplicate request id
    rolls back the insert), its writes are applied again one by one, so one
    bad write fails alone. A write whose future was cancelled before its
    group started is dropped.
    """

    def __init__(self, apply: Callable[[Sequence[W]], list[Any]]) -> None:
        self._apply = apply
        self._cond = threading.Condition()
        self._queue: list[tuple[W, Future[Any]]] = []
        self._running = False
        self._committing = False

    def submit(self, write: W) -> Future[Any]:
        future: Future[Any] = Future()
        with self._cond:
            self._queue.append((write, future))
            if self._running:
                self._cond.notify_all()  # the thread, and never only a `drain` waiter
            else:
                self._running = True
                threading.Thread(target=self._run, name="holon-ledger", daemon=True).start()
        return future

    def _run(self) -> None:
        while True:
            with self._cond:
                if not self._queue:
                    self._cond.wait(IDLE_S)
                    if not self._queue:
                        self._running = False
                        return
                group, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                self._committing = True
            try:
                group = [(w, f) for w, f in group if f.set_running_or_notify_cancel()]
                if group:
                    self._commit(group)
            except Exception as exc:
                # A bug of ours past `_apply`'s own handling: this group's writes fail,
                # and the thread goes on. Had it died, `_running` would stay true, no
                # thread would ever start again, and every later write would wait forever.
                log.exception("a group of %d writes failed outside its transaction", len(group))
                for _, future in group:
                    if not future.done():
                        future.set_exception(exc)
            finally:
                with self._cond:
                    self._committing = False
                    self._cond.notify_all()

    def drain(self, timeout: float | None = None) -> bool:
        """Wait until every write submitted so far is committed (or failed); False on timeout."""
        with self._cond:
            return self._cond.wait_for(
                lambda: not self._queue and not self._committing, timeout=timeout
            )

    def _commit(self, group: list[tuple[W, Future[Any]]]) -> None:
        writes = [w for w, _ in group]
        try:
            results = self._apply(writes)
        except BaseException as exc:  # the whole transaction rolled back
            if len(group) == 1:
                results = [exc]
            else:
                log.warning(
                    "a ledger group of %d failed (%s); applying one by one", len(group), exc
                )
                results = []
                for write in writes:
                    try:
                        results += self._apply([write])
                    except BaseException as alone:
                        results.append(alone)
        for (_, future), result in zip(group, results, strict=True):
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(result)
