"""The event loop the CLI's own calls run on: uvloop's, where it is installed.

An eval's runner is CPU-bound in one process at high concurrency (timers,
task switches, socket and queue wake-ups by the thousand a second), and
uvloop does that loop work in C: about a tenth less CPU per cell in
`bench/eval`. uvicorn already picks it for the servers; it is not built
for Windows, where the standard loop runs instead.

Everything alive when the loop starts (imported modules, the plan with its
suites, cases and compiled checks) outlives it, so it is frozen out of the
garbage collector's full passes for the duration (`gc.freeze`): each full
pass otherwise walks every one of those objects, about 7% of an eval's CPU
in `bench/eval`. It goes back to the collector when the loop ends, or when
the outermost `frozen_gc` block ends (`holon eval` keeps finishing the eval
inside one: otherwise the first full pass after the loop lands in it).

Inside the same blocks the youngest generation is collected after 10,000 net
allocations instead of 700: a runner at concurrency 64 keeps a few thousand
short-lived objects alive at any moment (the cells in flight, their answers,
the results waiting for the group commit), so at 700 every young pass (one
every few milliseconds) found them alive and moved them on, to be walked
again by the older generations' passes. Measured in `bench/eval` (20 ms
agent, concurrency 64, `gc.callbacks`): 101 young and 9 middle passes during
the runner's loop, against 8 young passes at 5,000 and 1 at 20,000, and four
fifths less time in the collector.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

__all__ = ["frozen_gc", "run_loop"]

_T = TypeVar("_T")


def _factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - not on Windows
        return None
    return uvloop.new_event_loop


_frozen_depth = 0
_frozen_lock = threading.Lock()
_YOUNG_THRESHOLD = 10_000  # net allocations between passes over the youngest generation
_thresholds: tuple[int, int, int] = (700, 10, 10)  # the thresholds to restore


@contextlib.contextmanager
def frozen_gc() -> Iterator[None]:
    """The objects alive now are left out of the collector's passes until the
    outermost of nested blocks ends (`gc.freeze`, then `gc.unfreeze`), and the
    youngest generation is collected less often meanwhile (see above)."""
    global _frozen_depth, _thresholds
    with _frozen_lock:
        _frozen_depth += 1
        gc.freeze()
        if _frozen_depth == 1:
            _thresholds = gc.get_threshold()
            young, middle, old = _thresholds
            gc.set_threshold(max(young, _YOUNG_THRESHOLD), middle, old)
    try:
        yield
    finally:
        with _frozen_lock:
            _frozen_depth -= 1
            if _frozen_depth == 0:
                gc.unfreeze()
                gc.set_threshold(*_thresholds)


def run_loop(main: Coroutine[Any, Any, _T]) -> _T:
    """`asyncio.run(main)`, on uvloop when it is installed, the older objects frozen."""
    with frozen_gc(), asyncio.Runner(loop_factory=_factory()) as runner:
        return runner.run(main)
