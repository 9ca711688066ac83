"""When a runner claims again: at once when its own cells are all answered, after a
wait when other runners hold the rest (on SQLite and PostgreSQL)."""

from __future__ import annotations

import time
from pathlib import Path

from agents import run_loop
from evals import make_plan, start
from evals._runner import Runner, cache_for
from records import CellStatus, Store
from tests.evals.runner.test_eval import _setup


def test_a_runner_whose_cells_are_answered_claims_again_at_once(
    store: Store, tmp_path: Path
) -> None:
    agent = _setup(store, tmp_path)
    home = tmp_path / "home"
    plan = make_plan(store, agent, home=home, concurrency=2)
    info = start(store, plan)
    # A claim finds nothing while the last cells are still in flight; the wait
    # before the next claim is a minute here, and the runner does not sit it out.
    runner = Runner(store, plan, info.id, cache=cache_for(home), pdf=None, claim_retry_s=60.0)
    began = time.monotonic()
    run_loop(runner.run())
    assert time.monotonic() - began < 30
    cells = store.evals.cells(info.id)
    assert len(cells) == 12 and all(c.status == CellStatus.DONE for c in cells)
    assert {c.recorded_by for c in cells} == {runner.owner}


def test_a_runner_waits_for_a_cell_another_runner_holds(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path)
    home = tmp_path / "home"
    plan = make_plan(store, agent, home=home, concurrency=2)
    info = start(store, plan)
    # Another host's runner holds one cell under a lease of a second, and never answers.
    held = store.evals.record_and_claim(info.id, [], owner="elsewhere:1:x", claim=1, lease_s=1.0)
    assert held is not None and len(held.claimed) == 1
    taken = held.claimed[0]
    runner = Runner(store, plan, info.id, cache=cache_for(home), pdf=None, claim_retry_s=0.1)
    began = time.monotonic()
    run_loop(runner.run())
    # Its own cells answered, the runner went on claiming until the lease ran out
    # and took the held cell over: every cell recorded once, all by this runner.
    assert time.monotonic() - began >= 0.9
    cells = {c.idx: c for c in store.evals.cells(info.id)}
    assert len(cells) == 12 and all(c.status == CellStatus.DONE for c in cells.values())
    assert {c.recorded_by for c in cells.values()} == {runner.owner}
    assert cells[taken.idx].request_id == taken.request_id
