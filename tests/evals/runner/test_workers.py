"""`holon worker` processes split one eval on PostgreSQL; retention keeps grades."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from evals import make_plan, run_worker, start
from records import Store, new_key, open_store
from tests.evals.runner.test_eval import _setup

ROOT = Path(__file__).resolve().parents[3]


def test_a_worker_finishes_an_eval_started_elsewhere(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path)
    home = tmp_path / "home"
    info = start(store, make_plan(store, agent, home=home))
    stats = run_worker(store, home=home, once=True)
    assert stats.evals_worked == {info.id} and stats.evals_finished == {info.id}
    assert store.evals.get(info.id).status == "done"
    assert store.evals.current_record(agent) is not None
    # Nothing left: a second worker finds no work and stops.
    assert run_worker(store, home=home, once=True).evals_worked == set()


def test_retention_drops_outputs_and_keeps_grades(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path)
    home = tmp_path / "home"
    info = start(store, make_plan(store, agent, home=home))
    run_worker(store, home=home, once=True)
    before = store.evals.cells(info.id)
    assert all(c.output is not None for c in before)
    assert store.evals.drop_outputs(datetime.now(UTC) - timedelta(days=1)) == 0
    assert store.evals.drop_outputs(datetime.now(UTC) + timedelta(seconds=1)) == len(before)
    after = store.evals.cells(info.id)
    assert all(c.output is None for c in after)
    assert [(c.passed, c.checks, c.outcome_code) for c in after] == [
        (c.passed, c.checks, c.outcome_code) for c in before
    ]


@pytest.mark.slow
@pytest.mark.postgres
def test_three_worker_processes_record_each_cell_once(postgres_url: str, tmp_path: Path) -> None:
    key = new_key().decode()
    store = open_store(postgres_url, secret_key=key, auto_upgrade=True)
    try:
        agent = _setup(store, tmp_path, cases=30)
        plan = make_plan(store, agent, home=tmp_path / "home", concurrency=2, pace_s=0.03)
        info = start(store, plan)
        env = {
            **os.environ,
            "HOLON_DATABASE_URL": postgres_url,
            "HOLON_SECRET_KEY": key,
            "HOLON_HOME": str(tmp_path / "workers"),
        }
        workers = [
            subprocess.Popen(
                [sys.executable, "-m", "gateway.cli", "worker", "--once", "--json"],
                env=env,
                cwd=ROOT,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        for worker in workers:
            out, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
        cells = store.evals.cells(info.id)
        assert len(cells) == 60 == plan.cells_total
        assert all(c.status == "done" and c.recorded_by for c in cells)
        assert sorted(c.idx for c in cells) == list(range(60))
        assert len({c.recorded_by for c in cells}) >= 2, "the workers did not share the eval"
        assert store.evals.get(info.id).status == "done"
        assert store.evals.current_record(agent) is not None
    finally:
        store.close()


def test_an_eval_that_raises_is_logged_counted_and_skipped_while_others_are_worked(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """One eval whose working raises something other than a store outage once ended
    `holon worker` (and made the gateway's workers start over on the same eval)."""
    import ipaddress

    from evals import _worker

    agent = _setup(store, tmp_path)
    broken_agent = _setup(store, tmp_path / "other", id="acme/octal-triage")
    home = tmp_path / "home"
    broken = start(store, make_plan(store, broken_agent, home=home))  # older: met first
    fine = start(store, make_plan(store, agent, home=home))
    real = _worker.rebuild

    def rebuild(store: Store, plan: Any, *, home: Path) -> Any:
        rebuilt = real(store, plan, home=home)
        if rebuilt.agent.id == broken_agent:
            raise ipaddress.AddressValueError("Leading zeros are not permitted in '0177'")
        return rebuilt

    monkeypatch.setattr(_worker, "rebuild", rebuild)
    stats = run_worker(store, home=home, once=True)
    assert stats.eval_failures == 1  # left alone after it failed
    assert stats.evals_finished == {fine.id}
    assert store.evals.get(broken.id).status == "running"
    (logged,) = [r for r in caplog.records if broken.id in r.getMessage()]
    assert logged.exc_info is not None and "Leading zeros" in logged.getMessage()


def test_a_worker_tells_its_health_of_each_pass_and_each_failed_eval(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evals import _worker

    agent = _setup(store, tmp_path)
    home = tmp_path / "home"
    info = start(store, make_plan(store, agent, home=home))

    def rebuild(store: Store, plan: Any, *, home: Path) -> Any:
        raise KeyError("a bug")

    monkeypatch.setattr(_worker, "rebuild", rebuild)

    class Watcher:
        def __init__(self) -> None:
            self.passes = 0
            self.failures: list[tuple[str, str]] = []

        def ok(self) -> None:
            self.passes += 1

        def failed(self, item: str, exc: BaseException) -> None:
            self.failures.append((item, repr(exc)))

    watcher = Watcher()
    stats = run_worker(store, home=home, once=True, health=watcher)
    assert watcher.failures == [(f"eval {info.id}", "KeyError('a bug')")]
    assert watcher.passes == 1 and stats.eval_failures == 1


@pytest.mark.anyio
async def test_the_lease_heartbeat_beats_on_past_a_renewal_that_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A heartbeat that ended at its first failed renewal let the leases of cells still
    being worked lapse: another worker then called the agent for them again."""
    import asyncio
    from types import SimpleNamespace

    from evals._runner import Runner

    renewals: list[tuple[Any, ...]] = []

    def renew(*args: Any) -> None:
        renewals.append(args)
        if len(renewals) == 1:
            raise ValueError("a lease row the store cannot read")

    async def direct(fn: Any, *args: Any) -> Any:
        return fn(*args)

    runner = SimpleNamespace(
        eval_id="ev_1",
        owner="me",
        lease_s=0.3,  # a beat a second, the shortest
        inflight={3: 1},
        store=SimpleNamespace(evals=SimpleNamespace(renew=renew)),
        _db=direct,
    )
    beating = asyncio.create_task(Runner._heartbeat(runner))  # type: ignore[arg-type]
    deadline = asyncio.get_running_loop().time() + 10
    while len(renewals) < 2 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert not beating.done()
    beating.cancel()
    await asyncio.gather(beating, return_exceptions=True)
    assert len(renewals) >= 2
    (logged,) = [r for r in caplog.records if "renewing the leases" in r.getMessage()]
    assert "ev_1" in logged.getMessage() and logged.exc_info
