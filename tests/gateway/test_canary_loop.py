"""The canaries' loop cannot die quietly: one canary that raises is logged, counted and
skipped (gateway._loops), and the nudges on the live path never block or raise."""

from __future__ import annotations

import asyncio
import logging
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gateway._loops import Loop
from gateway.live import Canaries, CanaryPolicy, CanaryResult


def _canaries(tmp_path: Path, share: float) -> Canaries:
    # The store, executor and lookups are never reached: `send` is replaced below.
    none: Any = None
    return Canaries(
        none,
        none,
        none,
        home=tmp_path,
        policy=CanaryPolicy(share, 0, Decimal(1)),
        rng=random.Random(7),
    )


def test_one_canary_that_raises_is_logged_counted_and_the_loop_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    canaries = _canaries(tmp_path, share=1.0)
    sent: list[str] = []

    async def send(agent_id: str, capability: str) -> CanaryResult:
        if agent_id == "acme/bad":
            raise ValueError("At most 3 characters permitted in '0177'")
        sent.append(agent_id)
        return CanaryResult(agent_id, capability, True, passed=True)

    canaries.send = send  # type: ignore[method-assign]
    loop = Loop("canaries")

    async def run() -> None:
        task = asyncio.get_running_loop().create_task(canaries.run_forever(loop))
        loop.watch_task(task)
        await asyncio.sleep(0.01)  # the loop makes its queue
        for agent in ("acme/good", "acme/bad", "acme/other", "acme/bad", "acme/last"):
            canaries.nudge(agent, "calc.sum")
        for _ in range(100):
            if len(sent) == 3 and loop.state().failures == 2:
                break
            await asyncio.sleep(0.01)
        assert loop.state().running
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    with caplog.at_level(logging.ERROR, logger="gateway._loops"):
        asyncio.run(run())
    assert sorted(sent) == ["acme/good", "acme/last", "acme/other"]
    state = loop.state()
    assert state.failures == 2 and state.last_success is not None
    logged = [r for r in caplog.records if "canary to acme/bad" in r.getMessage()]
    assert len(logged) == 2 and all(r.exc_info for r in logged)


def test_a_nudge_before_the_loop_runs_or_past_the_queue_is_dropped_not_raised(
    tmp_path: Path,
) -> None:
    canaries = _canaries(tmp_path, share=1.0)
    canaries.nudge("acme/a", "calc.sum")  # no loop yet: nothing queued, nothing raised

    async def run() -> None:
        loop = Loop("canaries")
        blocked = asyncio.Event()

        async def send(agent_id: str, capability: str) -> CanaryResult:
            await blocked.wait()
            return CanaryResult(agent_id, capability, True, passed=True)

        canaries.send = send  # type: ignore[method-assign]
        task = asyncio.get_running_loop().create_task(canaries.run_forever(loop))
        await asyncio.sleep(0.01)
        for _ in range(1100):
            canaries.nudge("acme/a", "calc.sum")
        assert canaries.dropped >= 1100 - 1000 - 4 - 1  # the queue, the in-flight, one taken
        blocked.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    asyncio.run(run())


def test_share_zero_never_queues(tmp_path: Path) -> None:
    canaries = _canaries(tmp_path, share=0.0)

    async def run() -> int:
        task = asyncio.get_running_loop().create_task(canaries.run_forever(Loop("canaries")))
        await asyncio.sleep(0.01)
        for _ in range(1000):
            canaries.nudge("acme/a", "calc.sum")
        queued = canaries._queue.qsize() if canaries._queue is not None else -1
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return queued

    assert asyncio.run(run()) == 0
