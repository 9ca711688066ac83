"""Background loops that cannot die quietly: each one named, its last success and failures kept.

A loop is background work with items (agents to probe, evals to work, token
uses to write, cache entries to reload, A2A tasks to finish). One item's
failure, of any exception, must never end the loop: the loop catches it
around the item, and `Loop.failed` logs it once with the item and counts it,
then the loop goes on with the others. `Loop.ok` says the loop did its work
just now. A red-team agent whose endpoint made the identity probe raise
`AddressValueError` ended the probe task with no log line: no agent of that
process was probed again, and a certified agent that changed version stayed
fresh. A loop whose task or thread has ended (`watch`), or that has not
succeeded within `stale_after_s`, is not ready: /readyz answers 503 naming
it, and /metrics shows every loop's state (gateway/web/_metrics.py).

Loops are registered per app (`Loops`), including the process-wide ones
(the token-use writer, the lookup cache's refresher) that live beside their
thread. Items (agent ids, token ids) go to the log only: a loop's state holds
its name, times and counts, which anyone asking /readyz may read.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from schema.errors import HolonError

log = logging.getLogger(__name__)

__all__ = ["Loop", "LoopState", "Loops"]


@dataclass(frozen=True)
class LoopState:
    """What a loop's health is, at one moment: nothing about its items."""

    name: str
    running: bool  # its task or thread has not ended
    last_success: float | None  # epoch seconds
    age_s: float  # since its last success (since it was made, before the first)
    failures: int  # items that raised
    stale_after_s: float | None  # None: it runs on demand, idle without work

    @property
    def stale(self) -> bool:
        return self.stale_after_s is not None and self.age_s > self.stale_after_s

    @property
    def ready(self) -> bool:
        return self.running and not self.stale

    def problem(self) -> str | None:
        """Why the loop is not ready, in words (None: it is)."""
        if not self.running:
            return f"background loop {self.name} has stopped"
        if self.stale:
            return f"background loop {self.name} has not succeeded for {self.age_s:.0f} s"
        return None

    def view(self) -> dict[str, object]:
        when = self.last_success
        return {
            "running": self.running,
            "last_success": (
                None
                if when is None
                else datetime.fromtimestamp(when, UTC).isoformat(timespec="milliseconds")
            ),
            "seconds_since_success": None if when is None else round(self.age_s, 3),
            "failures": self.failures,
            "stale_after_s": self.stale_after_s,
        }


class Loop:
    """One named loop: `ok()` after work done, `failed(item, exc)` for one item that raised.

    `stale_after_s`: how long without a success makes the loop not ready
    (None for a loop that runs only when there is work, such as a queue's
    thread). `watch(alive)` names the loop's task or thread: once `alive()`
    is false, the loop has stopped. Thread-safe: loops report from threads
    and the event loop alike.
    """

    def __init__(
        self,
        name: str,
        *,
        stale_after_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        self.stale_after_s = stale_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._since = clock()
        self._last_ok: float | None = None
        self._failures = 0
        self._alive: Callable[[], bool] = lambda: True

    def watch(self, alive: Callable[[], bool]) -> None:
        """The loop runs while `alive()` is true (its task is not done, its thread is alive)."""
        with self._lock:
            self._alive = alive
            self._since = self._clock()

    def watch_task(self, task: asyncio.Task[None]) -> None:
        """The loop is `task`; should it ever end with an exception, that is logged at once."""
        self.watch(lambda: not task.done())
        task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("background loop %s has stopped: %r", self.name, exc, exc_info=exc)

    def ok(self) -> None:
        with self._lock:
            self._last_ok = self._clock()

    def failed(self, item: str, exc: BaseException) -> None:
        """`item` raised `exc`: logged once (a traceback unless it is one of holon's own
        errors, which say what happened), and counted. The caller goes on with the next."""
        with self._lock:
            self._failures += 1
        if isinstance(exc, HolonError):
            log.warning("background loop %s: %s failed: %s", self.name, item, exc)
        else:
            log.error("background loop %s: %s failed: %r", self.name, item, exc, exc_info=exc)

    def state(self) -> LoopState:
        now = self._clock()
        with self._lock:
            last, failures, since, alive = self._last_ok, self._failures, self._since, self._alive
        try:
            running = bool(alive())
        except Exception:  # a liveness check that fails cannot vouch for its loop
            log.exception("background loop %s: its liveness check failed", self.name)
            running = False
        age = max(0.0, now - (since if last is None else last))
        return LoopState(self.name, running, last, age, failures, self.stale_after_s)


class Loops:
    """The loops one app runs or relies on, by name."""

    def __init__(self) -> None:
        self._loops: dict[str, Loop] = {}

    def add(self, loop: Loop) -> Loop:
        self._loops[loop.name] = loop
        return loop

    def named(self, name: str) -> Loop:
        """The loop of that name (made, as one run on demand, if none was added)."""
        loop = self._loops.get(name)
        return loop if loop is not None else self.add(Loop(name))

    def states(self) -> list[LoopState]:
        return [self._loops[name].state() for name in sorted(self._loops)]
