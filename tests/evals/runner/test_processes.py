"""`holon eval --processes N`: one eval spread over local processes (evals._processes).

Real forked processes on a real store (both backends): the same scores and
report as one process, every cell recorded exactly once and its cost once, a
child killed mid-run costing only the cells it held, and Ctrl-C stopping
every process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from evals import check_processes, make_plan, max_processes, start, work
from evals.reports import build_report
from records import Store, new_key, open_store
from schema.errors import UsageError
from tests.evals._stable import RUN_VOLATILE, without
from tests.evals.runner.test_eval import _scored, _setup
from tests.gateway._cli import CLI, add_triage

ROOT = Path(__file__).resolve().parents[3]

# What differs between two runs of the same measurement: ids, clocks, timings.
VOLATILE = RUN_VOLATILE | {"generated_at", "duration_s"}


def _stable(value: Any) -> Any:
    return without(value, VOLATILE)


def _cells(store: Store, eval_id: str) -> list[tuple[Any, ...]]:
    return [
        (c.idx, c.status, c.passed, c.outcome_code, c.cost_usd, c.checks)
        for c in store.evals.cells(eval_id)
    ]


def test_two_processes_score_and_report_as_one(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path, cases=15)
    home = tmp_path / "home"
    runs = {}
    for processes in (1, 2):
        plan = make_plan(store, agent, home=home, concurrency=4)
        seen: list[dict[str, Any]] = []
        info = work(
            store, plan, start(store, plan), home=home, processes=processes, progress=seen.append
        )
        assert info.status == "done" and info.result is not None
        # Progress counts every process's cells, and only goes up.
        done = [p["done"] for p in seen]
        assert done == sorted(done) and done[-1] == 30, done
        runs[processes] = info
    one, two = runs[1], runs[2]
    assert _scored(two.result["record"]) == _scored(one.result["record"])
    assert _stable(build_report(store, two.id, audience="operator")) == _stable(
        build_report(store, one.id, audience="operator")
    )
    # Every cell exactly once, by both processes, each with its own owner.
    cells = store.evals.cells(two.id)
    assert sorted(c.idx for c in cells) == list(range(30))
    assert all(c.status == "done" and c.attempts == 1 for c in cells)
    assert _cells(store, two.id) == _cells(store, one.id)
    owners = Counter(c.recorded_by for c in cells)
    assert len(owners) == 2, owners
    pids = {owner.split(":")[1] for owner in owners}
    assert str(os.getpid()) in pids  # this process worked its share; the other one is gone
    # The cost, once per cell: each under its case's cap, the eval's sum that of its cells.
    cap = Decimal("0.01")  # the tiny suite's max_cost_usd
    costs = [Decimal(c.cost_usd) for c in cells]
    assert all(Decimal(0) < cost <= cap for cost in costs)
    spent = store.evals.progress(two.id)
    assert (
        Decimal(spent["cost_usd"])
        == sum(costs)
        == sum(Decimal(c.cost_usd) for c in store.evals.cells(one.id))
    )
    assert spent["done"] == 30


@pytest.mark.parametrize("processes", [0, -1, 10**6])
def test_a_process_count_out_of_bounds_is_a_usage_error(processes: int) -> None:
    with pytest.raises(UsageError, match=f"--processes {processes}"):
        check_processes(processes, 10**7)


def test_more_processes_than_cells_in_flight_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="more than --concurrency 4"):
        check_processes(5, 4)
    check_processes(4, 4)  # one cell in flight each
    check_processes(max_processes(), max_processes())


def _cli_setup(cli: CLI, tmp_path: Path, cases: int = 6) -> None:
    add_triage(cli, tmp_path, cases)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--processes", "0"], "--processes 0: at least 1"),
        (["--processes", "-3"], "--processes -3: at least 1"),
        (["--processes", "100000"], "--processes 100000: at most"),
        (["--processes", "5", "--concurrency", "4"], "more than --concurrency 4"),
        (["--processes", "2", "--gateway", "http://127.0.0.1:9"], "holon worker"),
    ],
)
def test_the_cli_refuses_before_planning(tmp_path: Path, argv: list[str], message: str) -> None:
    cli = CLI(tmp_path / "home")
    _cli_setup(cli, tmp_path)
    if "--gateway" in argv:  # refused before any request: no gateway listens there
        cli = CLI(tmp_path / "home", HOLON_TOKEN="hk_unused")
    res = cli("eval", "acme/ticket-triage", "--yes", *argv)
    assert res.code == 2 and message in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert cli("evals", "list", "--json").json()["items"] == []


def test_the_plan_says_how_many_processes_share_it(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home")
    _cli_setup(cli, tmp_path)
    res = cli("eval", "acme/ticket-triage", "--yes", "--processes", "2", "--concurrency", "4")
    assert res.code in (0, 1), res.stderr
    assert "12 cells, worst case $0.12, concurrency 4 over 2 local processes" in res.stdout
    eval_id = cli("evals", "list", "--json").json()["items"][0]["id"]
    status = cli("evals", "status", eval_id, "--json").json()
    assert status["status"] == "done"
    assert status["progress"] == {"pending": 0, "running": 0, "done": 12}


def _children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


def _env(store_url: str, key: str, home: Path) -> dict[str, str]:
    env = {**os.environ, "HOLON_HOME": str(home), "HOLON_EXAMPLES": "off"}
    env.update(HOLON_DATABASE_URL=store_url, HOLON_SECRET_KEY=key)
    return env


def _eval_process(env: dict[str, str], *extra: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "gateway.cli", "eval", "acme/ticket-triage", "--yes"]
    command += ["--json", "--concurrency", "2", "--processes", "2", "--pace", "0.04", *extra]
    return subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _running(store: Store, done_at_least: int) -> str:
    """The eval's id once `done_at_least` of its cells are recorded."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        items = store.evals.list(agent_id=None, cursor=None, limit=5).items
        if items and store.evals.progress(items[0].id)["done"] >= done_at_least:
            return items[0].id
        time.sleep(0.02)
    raise AssertionError("the eval never got going")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc for the children")
def test_a_child_killed_mid_run_costs_only_its_cells(store_url: str, tmp_path: Path) -> None:
    key = new_key().decode()
    store = open_store(store_url, secret_key=key, auto_upgrade=True)
    try:
        agent = _setup(store, tmp_path, cases=20)
        env = _env(store_url, key, tmp_path / "home")
        proc = _eval_process(env)
        eval_id = _running(store, 4)
        (child,) = _children(proc.pid)
        os.kill(child, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
        # The parent finished the eval itself: the dead child's cells were claimed again.
        assert proc.returncode in (0, 1), err
        assert f"process {child} (of --processes 2) stopped: killed by SIGKILL" in err
        cells = store.evals.cells(eval_id)
        assert sorted(c.idx for c in cells) == list(range(40))
        assert all(c.status == "done" for c in cells)
        owners = Counter(c.recorded_by.split(":")[1] for c in cells if c.recorded_by)
        assert sum(owners.values()) == 40 and set(owners) <= {str(proc.pid), str(child)}
        assert owners[str(proc.pid)] > 0
        info = store.evals.get(eval_id)
        assert info.status == "done"
        # The same measurement as one undisturbed process makes.
        plan = make_plan(store, agent, home=tmp_path / "home", concurrency=4)
        reference = work(store, plan, start(store, plan), home=tmp_path / "home")
        assert reference.result is not None and info.result is not None
        assert _scored(info.result["record"]) == _scored(reference.result["record"])
        assert _cells(store, eval_id) == _cells(store, reference.id)
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc for the children")
def test_ctrl_c_stops_every_process_and_resume_finishes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'holon.db'}"
    key = new_key().decode()
    store = open_store(url, secret_key=key, auto_upgrade=True)
    try:
        _setup(store, tmp_path, cases=20)
        env = _env(url, key, tmp_path / "home")
        proc = _eval_process(env)
        eval_id = _running(store, 3)
        (child,) = _children(proc.pid)
        proc.send_signal(signal.SIGINT)  # to the parent alone: it stops its child
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert not Path(f"/proc/{child}").exists(), "the child outlived the eval's process"
        counts = store.evals.counts(eval_id)
        assert 0 < counts["done"] < 40, counts
        # Cells in flight answered and were recorded, those claimed and not started were
        # given back; at most a claim the interrupt cut short stays held, by a process
        # now gone (resume takes it back at once, as after a single process's Ctrl-C).
        held = store.evals.running_owners(eval_id)
        assert {owner.split(":")[1] for owner in held} <= {str(proc.pid), str(child)}
        assert counts["running"] <= 2, counts
        cli = CLI(tmp_path / "home", HOLON_DATABASE_URL=url, HOLON_SECRET_KEY=key)
        refused = cli("evals", "resume", eval_id, "--processes", "3")  # concurrency 2
        assert refused.code == 2 and "more than --concurrency 2" in refused.stderr
        resumed = cli("evals", "resume", eval_id, "--json", "--processes", "2").json()
        assert resumed["status"] == "done", resumed
        assert resumed["progress"] == {"pending": 0, "running": 0, "done": 40}
        assert sorted(c.idx for c in store.evals.cells(eval_id)) == list(range(40))
    finally:
        store.close()
