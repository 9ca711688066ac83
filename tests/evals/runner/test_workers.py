"""`holon worker` processes split one eval on PostgreSQL; retention keeps grades."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

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
