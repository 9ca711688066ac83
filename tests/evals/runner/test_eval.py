"""The eval end to end, in-process, on SQLite and PostgreSQL, against a real example agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agents import load_manifest
from evals import make_plan, resume, start, work
from evals.suites import install_suite
from records import CellResultRow, Store
from schema.errors import Refused
from tests.evals.suites._make import make_suite, tiny_suite

ROOT = Path(__file__).resolve().parents[3]
TRIAGE = ROOT / "examples" / "agents" / "acme-ticket-triage.yaml"


def _setup(store: Store, tmp_path: Path, cases: int = 6, **manifest: Any) -> str:
    install_suite(store, tiny_suite(tmp_path, cases))
    data = load_manifest(TRIAGE).to_json()
    data.update(manifest)
    store.agents.register(data)
    return str(data["id"])


def _scored(record: dict[str, Any]) -> dict[str, Any]:
    keep = ("eval_score", "eval_score_ci95", "weakest_suite", "suites", "warnings")
    return {k: record[k] for k in keep}


def test_a_full_eval_writes_the_record(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path)
    plan = make_plan(store, agent, home=tmp_path / "home", concurrency=4)
    assert plan.full and plan.cells_total == 12
    info = work(store, plan, start(store, plan), home=tmp_path / "home")
    assert info.status == "done"
    record = store.evals.current_record(agent)
    assert record is not None and record.eval_id == info.id
    suite = record.suites["tiny"]
    assert suite.public.total == 6 and suite.holdout.total == 6
    assert record.eval_score == min(suite.public.rate, suite.holdout.rate)
    cells = store.evals.cells(info.id)
    assert all(c.status == "done" and c.outcome_code == "ok" for c in cells)
    assert len({c.request_id for c in cells}) == 12
    # What finishing scores from: the same cells, the same columns, in order.
    fields = ("idx", "suite_id", "split", "case_id", "status", "passed", "outcome_code")
    fields += ("cost_usd", "latency_ms")
    assert [tuple(getattr(c, f) for f in fields) for c in store.evals.scored_cells(info.id)] == [
        tuple(getattr(c, f) for f in fields) for c in cells
    ]


def test_a_narrowed_eval_writes_no_record(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path)
    plan = make_plan(store, agent, home=tmp_path / "home", repetitions=2)
    assert not plan.full and plan.cells_total == 24
    info = work(store, plan, start(store, plan), home=tmp_path / "home")
    assert info.status == "done" and info.result is not None
    assert store.evals.current_record(agent) is None


def test_the_plan_that_started_last_wins(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path)
    home = tmp_path / "home"
    first = start(store, make_plan(store, agent, home=home))
    second = start(store, make_plan(store, agent, home=home))
    plan = make_plan(store, agent, home=home)
    work(store, plan, second, home=home)  # the later one finishes first
    work(store, plan, first, home=home)
    record = store.evals.current_record(agent)
    assert record is not None and record.eval_id == second.id
    assert len(store.evals.record_history(agent)) == 2


def test_a_stale_claim_cannot_record(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path)
    plan = make_plan(store, agent, home=tmp_path / "home")
    info = start(store, plan)
    (old,) = store.evals.claim(info.id, "host:1:a", 1, lease_s=-1)  # expired at once
    (new,) = store.evals.claim(info.id, "host:2:b", 1, lease_s=60)
    assert new.idx == old.idx and new.fence == old.fence + 1 and new.reclaimed
    row = CellResultRow(old.idx, old.fence, "ok", True, "0", 1.0, 1, {}, None, None)
    assert store.evals.record(info.id, [row]) == []
    fresh = CellResultRow(new.idx, new.fence, "ok", True, "0", 1.0, 1, {}, None, None)
    assert store.evals.record(info.id, [fresh]) == [new.idx]
    assert store.evals.record(info.id, [fresh]) == []  # exactly once


def test_resume_after_a_crash_finishes_identically(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path)
    home = tmp_path / "home"
    reference = work(
        store,
        make_plan(store, agent, home=home),
        start(store, make_plan(store, agent, home=home)),
        home=home,
    )
    plan = make_plan(store, agent, home=home)
    crashed = start(store, plan)
    # A worker of a process that no longer exists held some cells when it died.
    store.evals.claim(crashed.id, f"{__import__('socket').gethostname()}:999999:dead", 5, 3600)
    assert store.evals.counts(crashed.id)["running"] == 5
    done = resume(store, crashed.id, home=home)
    assert done.status == "done"
    assert reference.result is not None and done.result is not None
    assert _scored(done.result["record"]) == _scored(reference.result["record"])


def test_resume_refuses_after_a_new_agent_version(store: Store, tmp_path: Path) -> None:
    agent = _setup(store, tmp_path)
    info = start(store, make_plan(store, agent, home=tmp_path / "home"))
    store.agents.register({**store.agents.manifest(agent), "version": "9.0.0"})
    with pytest.raises(Refused, match="now at version 9.0.0"):
        resume(store, info.id, home=tmp_path / "home")


def test_nothing_to_evaluate_is_a_refusal(store: Store, tmp_path: Path) -> None:
    data = load_manifest(TRIAGE).to_json()
    store.agents.register(data)
    with pytest.raises(Refused, match="no installed suite certifies"):
        make_plan(store, data["id"], home=tmp_path)


def test_records_go_stale_after_the_grace_period(store: Store, tmp_path: Path) -> None:
    from datetime import timedelta

    from evals.suites import install_suite as install
    from tests.evals.suites._make import SUITE_YAML

    agent = _setup(store, tmp_path / "v1")
    home = tmp_path / "home"
    plan = make_plan(store, agent, home=home)
    work(store, plan, start(store, plan), home=home)
    version = store.agents.get(agent).version
    fresh = store.evals.current_record_with_staleness(agent, version)
    assert fresh is not None and fresh.stale is False
    v2 = make_suite(
        tmp_path / "v2", suite_yaml=SUITE_YAML.replace("\nversion: 1\n", "\nversion: 2\n")
    )
    install(store, v2, activate=True)
    soon = store.evals.current_record_with_staleness(agent, version)
    assert soon is not None and soon.stale is False  # within the grace period
    later = store.evals.current_record_with_staleness(
        agent, version, now=store.suites.get("tiny").activated_at + timedelta(days=14)
    )
    assert later is not None and later.stale is True
    assert "grace period ended" in later.stale_reasons[0]
    store.suites.rotate_holdout("tiny")
    assert store.evals.current_record_with_staleness(agent, version).stale is False  # type: ignore[union-attr]


def test_cancel_stops_a_running_eval_without_a_record(store: Store, tmp_path: Path) -> None:
    import threading
    import time

    agent = _setup(store, tmp_path, cases=20)
    home = tmp_path / "home"
    plan = make_plan(store, agent, home=home, concurrency=1, pace_s=0.05)
    info = start(store, plan)
    worker = threading.Thread(target=work, args=(store, plan, info), kwargs={"home": home})
    worker.start()
    time.sleep(0.6)
    store.evals.cancel(info.id)
    worker.join(timeout=30)
    assert not worker.is_alive()
    counts = store.evals.counts(info.id)
    assert counts["done"] < 40
    assert store.evals.get(info.id).status == "cancelled"
    assert store.evals.current_record(agent) is None


def test_repeated_infrastructure_failures_stop_the_eval(store: Store, tmp_path: Path) -> None:
    from schema.errors import EnvironmentFault

    agent = _setup(store, tmp_path)
    home = tmp_path / "home"
    plan = make_plan(store, agent, home=home)
    info = start(store, plan)
    broken = plan.suites[0].suite.public[0]
    # A case whose input no longer fits the suite's input schema: the suite's
    # fault, never the agent's, so the cell is given back, not graded.
    object.__setattr__(broken, "input", {"no": "subject"})
    with pytest.raises(EnvironmentFault, match="failed [0-9]+ times outside the agent"):
        work(store, plan, info, home=home)
    cells = {c.idx: c for c in store.evals.cells(info.id)}
    assert cells[0].status == "pending"
    assert store.evals.get(info.id).status == "running"
