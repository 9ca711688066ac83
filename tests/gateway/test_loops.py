"""A background loop's health (gateway._loops): failures logged once with the item and
counted, staleness by its clock, and the lookup cache's refresher going on past a reload
that raises."""

from __future__ import annotations

import logging
import time

import pytest

from gateway import _ttl
from gateway._loops import Loop, Loops
from schema.errors import StoreUnavailable
from tests._clock import FakeClock


def test_a_loop_is_ready_until_it_stops_or_goes_without_success_too_long() -> None:
    clock = FakeClock(1_800_000_000.0)
    loop = Loop("probes", stale_after_s=10, clock=clock)
    assert loop.state().ready and loop.state().last_success is None
    clock.now += 11  # never succeeded since it was made
    assert loop.state().problem() == "background loop probes has not succeeded for 11 s"
    loop.ok()
    clock.now += 4
    state = loop.state()
    assert state.ready and state.age_s == 4
    assert state.view() == {
        "running": True,
        "last_success": "2027-01-15T08:00:11.000+00:00",
        "seconds_since_success": 4.0,
        "failures": 0,
        "stale_after_s": 10,
    }
    alive = [True]
    loop.watch(lambda: alive[0])
    alive[0] = False
    assert loop.state().problem() == "background loop probes has stopped"


def test_a_loop_run_on_demand_is_never_stale() -> None:
    clock = FakeClock(1_800_000_000.0)
    loops = Loops()
    loops.add(Loop("token-uses", clock=clock))
    clock.now += 86_400
    assert [s.ready for s in loops.states()] == [True]
    assert loops.named("token-uses") is loops.named("token-uses")
    assert [s.name for s in Loops().states()] == []


def test_a_failure_is_logged_once_with_its_item_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = Loop("probes")
    loop.failed("agent acme/octal", ValueError("Leading zeros are not permitted"))
    loop.failed("agent acme/away", StoreUnavailable("cannot reach the store"))
    assert loop.state().failures == 2
    bug, expected = caplog.records
    assert bug.levelno == logging.ERROR and bug.exc_info is not None
    assert "agent acme/octal" in bug.getMessage() and "Leading zeros" in bug.getMessage()
    # One of holon's own errors says what happened: no traceback.
    assert expected.levelno == logging.WARNING and expected.exc_info is None
    assert expected.getMessage() == (
        "background loop probes: agent acme/away failed: cannot reach the store"
    )


def test_a_liveness_check_that_raises_counts_as_stopped(caplog: pytest.LogCaptureFixture) -> None:
    loop = Loop("eval-workers")

    def alive() -> bool:
        raise RuntimeError("no threads")

    loop.watch(alive)
    assert loop.state().running is False
    assert "liveness check failed" in caplog.records[0].getMessage()


def test_the_refresher_goes_on_past_a_reload_that_raises(caplog: pytest.LogCaptureFixture) -> None:
    before = _ttl.REFRESHES.state().failures
    cache = _ttl.TtlCache(60, item=lambda key: f"key {key}")
    loaded = time.monotonic() - 40  # both past half their life: a hit queues a reload
    cache.put("bad", loaded, 1)
    cache.put("good", loaded, 1)

    def boom() -> int:
        raise ValueError("a row the cache cannot read")

    assert cache.get("bad", boom) == 1
    assert cache.get("good", lambda: 2) == 1
    _ttl._REFRESHER.submit(lambda: None).result()  # the reloads queued so far are done
    assert _ttl.REFRESHES.state().failures == before + 1
    assert cache.get("good", lambda: 3) == 2  # the other key was reloaded
    (logged,) = [r for r in caplog.records if "key bad" in r.getMessage()]
    assert logged.exc_info is not None and logged.levelno == logging.ERROR
