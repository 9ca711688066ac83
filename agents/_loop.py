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
in `bench/eval`. It goes back to the collector when the loop ends.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["run_loop"]

_T = TypeVar("_T")


def _factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - not on Windows
        return None
    return uvloop.new_event_loop


def run_loop(main: Coroutine[Any, Any, _T]) -> _T:
    """`asyncio.run(main)`, on uvloop when it is installed, the older objects frozen."""
    gc.freeze()
    try:
        with asyncio.Runner(loop_factory=_factory()) as runner:
            return runner.run(main)
    finally:
        gc.unfreeze()
