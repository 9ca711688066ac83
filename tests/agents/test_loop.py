"""`run_loop`: the CLI's runners on uvloop, the older objects out of the collector's passes."""

from __future__ import annotations

import asyncio
import gc

import uvloop

from agents import frozen_gc, run_loop


def test_run_loop_runs_on_uvloop_with_the_older_objects_frozen() -> None:
    async def inside() -> tuple[bool, int]:
        return isinstance(asyncio.get_running_loop(), uvloop.Loop), gc.get_freeze_count()

    assert gc.get_freeze_count() == 0
    on_uvloop, frozen = run_loop(inside())
    assert on_uvloop and frozen > 0
    assert gc.get_freeze_count() == 0  # back with the collector once the loop ends


def test_nested_blocks_unfreeze_only_at_the_outermost() -> None:
    with frozen_gc():
        with frozen_gc():
            pass
        assert gc.get_freeze_count() > 0  # the inner block's end left the outer's frozen
        assert run_loop(asyncio.sleep(0, "done")) == "done"
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0
