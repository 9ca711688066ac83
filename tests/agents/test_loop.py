"""`run_loop`: the CLI's runners on uvloop, the older objects out of the collector's passes."""

from __future__ import annotations

import asyncio
import gc

import uvloop

from agents import frozen_gc, run_loop


def test_run_loop_runs_on_uvloop_with_the_older_objects_frozen() -> None:
    async def inside() -> tuple[bool, int, tuple[int, int, int]]:
        loop = asyncio.get_running_loop()
        return isinstance(loop, uvloop.Loop), gc.get_freeze_count(), gc.get_threshold()

    assert gc.get_freeze_count() == 0
    before = gc.get_threshold()
    on_uvloop, frozen, thresholds = run_loop(inside())
    assert on_uvloop and frozen > 0
    # The youngest generation collected less often inside, the older ones as before.
    assert thresholds == (10_000, before[1], before[2])
    assert gc.get_freeze_count() == 0  # back with the collector once the loop ends
    assert gc.get_threshold() == before


def test_a_higher_threshold_set_before_is_kept_and_restored() -> None:
    before = gc.get_threshold()
    gc.set_threshold(50_000, before[1], before[2])
    try:
        with frozen_gc():
            assert gc.get_threshold()[0] == 50_000
        assert gc.get_threshold()[0] == 50_000
    finally:
        gc.set_threshold(*before)


def test_nested_blocks_unfreeze_only_at_the_outermost() -> None:
    before = gc.get_threshold()
    with frozen_gc():
        with frozen_gc():
            pass
        assert gc.get_freeze_count() > 0  # the inner block's end left the outer's frozen
        assert gc.get_threshold()[0] == 10_000
        assert run_loop(asyncio.sleep(0, "done")) == "done"
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold()[0] == 10_000
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before
