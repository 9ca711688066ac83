"""`run_loop`: the CLI's runners on uvloop, the older objects out of the collector's passes.

The freeze is process-wide state, and a test process runs other tests' threads (a
gateway's eval workers finishing an eval, a server still stopping) that may hold a
frozen block of their own when these start. So each check runs in a fresh interpreter,
where nothing else holds one.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run_fresh(body: str) -> None:
    script = "import asyncio, gc\nfrom agents import frozen_gc, run_loop\n" + textwrap.dedent(body)
    done = subprocess.run(
        [sys.executable, "-c", script + "\nprint('ok')\n"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr


def test_run_loop_runs_on_uvloop_with_the_older_objects_frozen() -> None:
    _run_fresh(
        """
        import uvloop

        async def inside():
            loop = asyncio.get_running_loop()
            return isinstance(loop, uvloop.Loop), gc.get_freeze_count(), gc.get_threshold()

        assert gc.get_freeze_count() == 0
        before = gc.get_threshold()
        on_uvloop, frozen, thresholds = run_loop(inside())
        assert on_uvloop and frozen > 0
        # The youngest generation collected less often inside, the older ones as before.
        assert thresholds == (10_000, before[1], before[2]), thresholds
        assert gc.get_freeze_count() == 0  # back with the collector once the loop ends
        assert gc.get_threshold() == before
        """
    )


def test_a_higher_threshold_set_before_is_kept_and_restored() -> None:
    _run_fresh(
        """
        before = gc.get_threshold()
        gc.set_threshold(50_000, before[1], before[2])
        with frozen_gc():
            assert gc.get_threshold()[0] == 50_000
        assert gc.get_threshold()[0] == 50_000
        """
    )


def test_nested_blocks_unfreeze_only_at_the_outermost() -> None:
    _run_fresh(
        """
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
        """
    )


def test_a_block_in_another_thread_keeps_the_freeze_until_it_ends() -> None:
    """Blocks in two threads nest as one count: the freeze ends with the last of them."""
    _run_fresh(
        """
        import threading

        entered, leave = threading.Event(), threading.Event()

        def hold():
            with frozen_gc():
                entered.set()
                leave.wait(10)

        other = threading.Thread(target=hold)
        other.start()
        entered.wait(10)
        assert run_loop(asyncio.sleep(0, "x")) == "x"
        assert gc.get_freeze_count() > 0  # the other thread's block still holds it
        leave.set()
        other.join(10)
        assert gc.get_freeze_count() == 0
        """
    )
