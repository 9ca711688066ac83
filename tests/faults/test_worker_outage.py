"""`holon worker` and a store outage: a private PostgreSQL cluster stopped under it.

The cluster is test_store_outage.py's (its own initdb, never the shared
server on 5432). Only the eval's cells are worked by a real `holon worker`
process. Stopped for a few seconds and started again, the store is waited
for: the worker does not exit, finishes the eval, and every cell ends with
exactly one recorded outcome, the same as an uninterrupted run
(`_campaign.check`). Kept down past `--max-outage`, the worker exits 3 with
the store's error and a hint, and a resume completes the eval just the same.
"""

from __future__ import annotations

import json
import logging
import random
import subprocess
import threading
import time
from pathlib import Path

import pytest

from evals import WorkerStats, make_plan, run_worker, start
from records import EvalInfo, new_key, open_store
from tests.faults._campaign import AGENT, CELLS, TALLY, Campaign, check, open_campaign
from tests.faults.test_store_outage import Cluster
from tests.faults.test_store_outage import cluster as cluster  # the private cluster fixture
from tests.gateway._cli import CLI

WAITING = "waiting for the store to answer again"


def _eval_under_way(
    campaign: Campaign, *worker_args: str
) -> tuple[EvalInfo, subprocess.Popen[str]]:
    """A started eval and a `holon worker --once` process working it."""
    store, home = campaign.store, campaign.home
    # Paced so the eval is still under way when the store goes.
    info = start(store, make_plan(store, AGENT, home=home, concurrency=4, pace_s=0.05))
    proc = campaign.spawn("worker", "--once", "--json", "--poll", "0.1", *worker_args)
    return info, proc


def _wait_for_cells(
    campaign: Campaign, proc: subprocess.Popen[str], eval_id: str, count: int
) -> None:
    deadline = time.monotonic() + 30
    while proc.poll() is None and time.monotonic() < deadline:
        if campaign.store.evals.counts(eval_id)["done"] >= count:
            return
        time.sleep(0.02)
    _, err = proc.communicate(timeout=5) if proc.poll() is not None else ("", "")
    pytest.fail(f"the worker recorded fewer than {count} cells in time (exit {proc.poll()}): {err}")


@pytest.mark.parametrize("seed", range(2))
@pytest.mark.slow
@pytest.mark.postgres
def test_worker_rides_out_a_postgres_restart(cluster: Cluster, tmp_path: Path, seed: int) -> None:
    rng = random.Random(f"worker-outage-{seed}")
    stop_after = rng.randint(4, CELLS // 3)  # cells recorded when the store goes away
    down_s = rng.choice([2.0, 4.0])
    campaign = open_campaign(cluster.create_database(), tmp_path)
    try:
        info, proc = _eval_under_way(campaign)  # the default --max-outage (300 s)
        _wait_for_cells(campaign, proc, info.id, stop_after)
        done = campaign.done_cells(info.id)
        assert len(done) < CELLS, "the eval finished before the store went away"
        cluster.stop()
        time.sleep(down_s)
        still_up = proc.poll() is None
        cluster.start()
        out, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err
        assert still_up, f"the worker exited during the outage: {proc.returncode} {err}"
        assert proc.returncode == 0, (out, err)
        result = json.loads(out)
        assert result["evals_finished"] == [info.id], result
        assert result["store_outages"] == 1, result
        # One warning for the outage, however many tries it took; then the all-clear.
        assert err.count(WAITING) == 1, err
        assert "cannot reach the store" in err, err
        assert "the store answers again after" in err, err
        TALLY["store outage: holon worker rode it out"] += 1
        check(campaign, info.id, done)
    finally:
        campaign.store.close()


@pytest.mark.slow
@pytest.mark.postgres
def test_worker_gives_up_after_max_outage(cluster: Cluster, tmp_path: Path) -> None:
    campaign = open_campaign(cluster.create_database(), tmp_path)
    try:
        info, proc = _eval_under_way(campaign, "--max-outage", "2")
        _wait_for_cells(campaign, proc, info.id, 6)
        stopped = time.monotonic()
        cluster.stop()
        try:
            out, err = proc.communicate(timeout=30)
            took = time.monotonic() - stopped
        finally:
            cluster.start()
        assert "Traceback" not in err, err
        assert proc.returncode == 3, (out, err)
        # Waited the bound (not at once, not forever), then failed as `holon eval` does.
        assert 2 <= took < 15, took
        assert err.count(WAITING) == 1, err
        error = json.loads(out)["error"]
        assert error["code"] == "store_unavailable", error
        assert "cannot reach the store" in error["message"], error
        assert "--max-outage" in error["details"]["hint"], error
        assert "start the worker again" in error["details"]["hint"], error
        assert error["details"]["max_outage_s"] == 2 and error["details"]["outage_s"] >= 2
        TALLY["store outage: holon worker gave up (exit 3)"] += 1
        # Nothing recorded is lost, nothing is recorded twice: a resume completes it.
        done = campaign.done_cells(info.id)
        assert campaign.store.evals.get(info.id).status == "running"
        res = campaign.cli("evals", "resume", info.id, "--json")
        assert res.code in (0, 1), res.stderr
        check(campaign, info.id, done)
    finally:
        campaign.store.close()


@pytest.mark.slow
@pytest.mark.postgres
def test_a_waiting_worker_stops_when_told(
    cluster: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The gateway's eval workers wait for the store without a bound; its shutdown
    (`stop`) must still end the wait at once, and the worker returns, not raises."""
    store = open_store(cluster.create_database(), secret_key=new_key(), auto_upgrade=True)
    stop = threading.Event()
    outcome: list[WorkerStats | BaseException] = []

    def work() -> None:
        try:
            outcome.append(run_worker(store, home=tmp_path / "home", stop=stop))
        except BaseException as exc:  # reported by the test, not lost in the thread
            outcome.append(exc)

    caplog.set_level(logging.INFO, logger="evals._worker")
    cluster.stop()
    try:
        thread = threading.Thread(target=work)
        thread.start()
        time.sleep(2.0)  # a few tries: 0.5 s, then 1 s, then waiting 2 s
        assert thread.is_alive() and not outcome, outcome
        told = time.monotonic()
        stop.set()
        thread.join(timeout=10)
        assert not thread.is_alive()
        assert time.monotonic() - told < 1.0
    finally:
        cluster.start()
        store.close()
    (stats,) = outcome
    assert isinstance(stats, WorkerStats), stats
    assert stats.store_outages == 1
    warnings = [
        r for r in caplog.records if r.name == "evals._worker" and r.levelno == logging.WARNING
    ]
    assert [WAITING in r.getMessage() for r in warnings] == [True], warnings


@pytest.mark.parametrize("value", ["-1", "nan", "soon"])
def test_max_outage_must_be_a_non_negative_number(tmp_path: Path, value: str) -> None:
    res = CLI(tmp_path / "home")("worker", "--max-outage", value, "--json")
    assert res.code == 2, res
    error = res.json()["error"]
    assert error["code"] == "usage" and "--max-outage" in error["message"], error


@pytest.mark.parametrize("value", ["0", "2.5", "inf"])
def test_max_outage_takes_seconds_zero_and_inf(tmp_path: Path, value: str) -> None:
    res = CLI(tmp_path / "home")("worker", "--once", "--max-outage", value, "--json")
    assert res.code == 0, res
    assert res.json() == {
        "evals_worked": [],
        "evals_finished": [],
        "store_outages": 0,
        "eval_failures": 0,
    }
