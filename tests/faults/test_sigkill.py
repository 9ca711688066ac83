"""SIGKILL campaign: real `holon eval` and `holon worker` processes killed mid-eval, then resumed.

Every trial is seeded (its seed picks where the kill lands) and ends with
`_campaign.check`: nothing lost, one recorded outcome per cell, cells done
before the kill untouched, and the same record as an uninterrupted run.
Two ways to kill: the in-process agent SIGKILLs its own process at its Nth
call (the kill always lands mid-eval, with cells claimed, answered and not
yet committed), or the test SIGKILLs the process once N cells are recorded
(the kill lands wherever the process happens to be: claiming, committing,
finishing).
"""

from __future__ import annotations

import random
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evals import make_plan, run_worker, start
from tests.faults._campaign import AGENT, CELLS, TALLY, Campaign, check, open_campaign

pytestmark = pytest.mark.slow

EVAL = ("eval", AGENT, "--yes", "--json", "--concurrency", "4")
WORKER = ("worker", "--once", "--json")
KILLED = -signal.SIGKILL


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=90)
    assert "Traceback" not in err, err
    return proc.returncode, err


def _new_eval(campaign: Campaign, before: set[str]) -> str:
    (eval_id,) = campaign.eval_ids() - before
    return eval_id


def _resume_in_process(campaign: Campaign, eval_id: str) -> None:
    res = campaign.cli("evals", "resume", eval_id, "--json")
    assert res.code in (0, 1), res.stderr
    assert res.json()["status"] == "done"


@pytest.fixture
def sqlite(tmp_path: Path) -> Iterator[Campaign]:
    campaign = open_campaign(f"sqlite:///{tmp_path / 'holon.db'}", tmp_path)
    yield campaign
    campaign.store.close()


@pytest.fixture
def postgres(postgres_url: str, tmp_path: Path) -> Iterator[Campaign]:
    campaign = open_campaign(postgres_url, tmp_path)
    yield campaign
    campaign.store.close()


# -- `holon eval` killed ------------------------------------------------------------------


def _eval_killed_by_its_agent(campaign: Campaign, seed: str) -> str:
    """`holon eval` killed by its agent at a cell drawn from `seed`: the eval it left."""
    kill_at = random.Random(seed).randint(1, CELLS)
    before = campaign.eval_ids()
    code, _ = _finish(campaign.spawn(*EVAL, kill_at=kill_at))
    assert code == KILLED
    TALLY["SIGKILL: holon eval"] += 1
    return _new_eval(campaign, before)


@pytest.mark.parametrize("seed", range(5))
def test_eval_killed_by_its_agent_then_resumed(sqlite: Campaign, seed: int) -> None:
    eval_id = _eval_killed_by_its_agent(sqlite, f"eval-self-{seed}")
    assert sqlite.store.evals.get(eval_id).status == "running"
    done = sqlite.done_cells(eval_id)
    _resume_in_process(sqlite, eval_id)
    check(sqlite, eval_id, done)


@pytest.mark.parametrize("seed", range(4))
def test_eval_killed_after_n_recorded_cells_then_resumed(sqlite: Campaign, seed: int) -> None:
    kill_after = random.Random(f"eval-ext-{seed}").randint(0, CELLS - 8)
    before = sqlite.eval_ids()
    proc = sqlite.spawn(*EVAL, "--pace", "0.02")
    eval_id = None
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        if eval_id is None:
            fresh = sqlite.eval_ids() - before
            eval_id = fresh.pop() if fresh else None
        elif sqlite.store.evals.counts(eval_id)["done"] >= kill_after:
            break
        time.sleep(0.01)
    alive = proc.poll() is None
    proc.send_signal(signal.SIGKILL)
    code, _ = _finish(proc)
    # Where the kill landed is up to the scheduler; the invariants hold wherever it did.
    if alive:
        TALLY["SIGKILL: holon eval"] += 1
    else:
        assert code in (0, 1)
    eval_id = eval_id or _new_eval(sqlite, before)
    done = sqlite.done_cells(eval_id)
    _resume_in_process(sqlite, eval_id)
    check(sqlite, eval_id, done)


# -- `holon worker` killed ----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_worker_killed_then_another_finishes(sqlite: Campaign, seed: int) -> None:
    rng = random.Random(f"worker-{seed}")
    kill_at = rng.randint(1, CELLS)
    store, home = sqlite.store, sqlite.home
    info = start(store, make_plan(store, AGENT, home=home, concurrency=4))
    code, _ = _finish(sqlite.spawn(*WORKER, kill_at=kill_at))
    assert code == KILLED
    TALLY["SIGKILL: holon worker"] += 1
    done = sqlite.done_cells(info.id)
    if seed % 2:
        code, err = _finish(sqlite.spawn(*WORKER))  # another worker, another process
        assert code == 0, err
    else:
        _resume_in_process(sqlite, info.id)
    check(sqlite, info.id, done)


# -- on PostgreSQL: kills among several processes -------------------------------------------


@pytest.mark.postgres
@pytest.mark.parametrize("seed", range(3))
def test_eval_killed_then_two_workers_finish_on_postgres(postgres: Campaign, seed: int) -> None:
    eval_id = _eval_killed_by_its_agent(postgres, f"pg-eval-{seed}")
    done = postgres.done_cells(eval_id)
    # Two workers take over together: both reclaim the dead process's cells,
    # under row locks, and split what is left.
    workers = [postgres.spawn(*WORKER) for _ in range(2)]
    for worker in workers:
        code, err = _finish(worker)
        assert code == 0, err
    check(postgres, eval_id, done)


@pytest.mark.postgres
@pytest.mark.parametrize("seed", range(4))
def test_one_of_two_workers_killed_on_postgres(postgres: Campaign, seed: int) -> None:
    rng = random.Random(f"pg-workers-{seed}")
    store, home = postgres.store, postgres.home
    plan = make_plan(store, AGENT, home=home, concurrency=4, pace_s=0.02)
    info = start(store, plan)
    # The victim dies within its first claim (at most `concurrency` cells), while
    # the other worker runs beside it.
    victim = postgres.spawn(*WORKER, kill_at=rng.randint(1, plan.concurrency))
    survivor = postgres.spawn(*WORKER)
    code, _ = _finish(victim)
    if code == KILLED:
        TALLY["SIGKILL: holon worker"] += 1
    code, err = _finish(survivor)
    assert code == 0, err
    done = postgres.done_cells(info.id)
    _resume_in_process(postgres, info.id)
    check(postgres, info.id, done)


@pytest.mark.parametrize("owner", ["{host}:999999:dead", "elsewhere:1:expired"])
def test_a_worker_reclaims_cells_when_none_is_pending(sqlite: Campaign, owner: str) -> None:
    """Regression: a worker used to skip an eval with no pending cell, so the cells a
    dead worker had claimed last stayed `running` and the eval never finished."""
    store, home = sqlite.store, sqlite.home
    info = start(store, make_plan(store, AGENT, home=home, concurrency=4))
    owner = owner.format(host=socket.gethostname())
    lease_s = 3600 if owner.endswith("dead") else -1  # a dead local process, or a lapsed lease
    assert len(store.evals.claim(info.id, owner, CELLS, lease_s)) == CELLS
    stats = run_worker(store, home=home, once=True)
    assert stats.evals_finished == {info.id}
    check(sqlite, info.id, {})
