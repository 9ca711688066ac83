"""The fault campaign's plumbing: a small eval, an audit of every recording, the checks.

One trial = one store with the kill-switch agent (`tests/faults/_agent.py`)
registered as acme/ticket-triage and a 48-cell suite, an uninterrupted
reference eval run in-process, then the faulted eval (real `holon eval` /
`holon worker` subprocesses, killed), then a resume, then `check`:

- nothing lost: every cell of the plan is `done` with an outcome;
- exactly one recorded outcome per cell: an audit trigger on `eval_cells`
  logs every write of a result, and each cell has exactly one such write
  (cell rows are unique by key, so only this catches a result recorded twice);
- done is final: cells done before the resume kept their recording;
- identical: each cell's outcome, pass and check results equal the reference
  run's, and the agent record equals the reference's but for its eval id and
  timestamps.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import text

from agents import load_manifest
from evals import make_plan, start, work
from evals.suites import install_suite
from records import Store, new_key, open_store
from tests.evals.suites._make import SUITE_YAML, case, make_suite
from tests.faults._agent import KILL_AT_CALL
from tests.gateway._cli import CLI, Result

ROOT = Path(__file__).resolve().parents[2]
TRIAGE = ROOT / "examples" / "agents" / "acme-ticket-triage.yaml"
AGENT = "acme/ticket-triage"
ENDPOINT = "asgi:tests.faults._agent:app"
CASES = 12  # per split; with 2 repetitions: 48 cells
CELLS = CASES * 2 * 2
# Per eval by design: its id, times and the certificate issued for it.
VOLATILE = ("eval_id", "evaluated_at", "eval_started_at", "certificate_id")

# What the campaign did, summed over the session (printed by tests/_campaign_totals.py, copied to
# docs/reliability.md).
TALLY: Counter[str] = Counter()

_AUDIT_SQLITE = [
    "CREATE TABLE fault_audit (eval_id TEXT, idx INTEGER, fence INTEGER, recorded_by TEXT)",
    "CREATE TRIGGER fault_audit_done AFTER UPDATE OF status, finished_at ON eval_cells "
    "WHEN NEW.status = 'done' BEGIN "
    "INSERT INTO fault_audit VALUES (NEW.eval_id, NEW.idx, NEW.fence, NEW.recorded_by); END",
]
_AUDIT_POSTGRES = [
    "CREATE TABLE fault_audit (eval_id TEXT, idx INTEGER, fence INTEGER, recorded_by TEXT)",
    "CREATE FUNCTION fault_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO fault_audit VALUES (NEW.eval_id, NEW.idx, NEW.fence, NEW.recorded_by); "
    "RETURN NULL; END $$",
    "CREATE TRIGGER fault_audit_done AFTER UPDATE OF status, finished_at ON eval_cells "
    "FOR EACH ROW WHEN (NEW.status = 'done') EXECUTE FUNCTION fault_audit_row()",
]


def _cases(prefix: str, subject: str, label: str, wrong: str) -> list[dict[str, Any]]:
    # Every third case expects the wrong label: the rates are not all 1, so a
    # lost or doubled cell would move them.
    return [
        case(f"{prefix}{i}", f"{subject} {i}", wrong if i % 3 == 0 else label) for i in range(CASES)
    ]


@dataclass
class Campaign:
    """One store under test, with what its subprocesses need to reach it."""

    store: Store
    url: str
    key: str
    home: Path
    reference: Reference | None = None  # the uninterrupted run, set by open_campaign

    def env(self, kill_at: int | None = None) -> dict[str, str]:
        env = {
            **os.environ,
            "HOLON_DATABASE_URL": self.url,
            "HOLON_SECRET_KEY": self.key,
            "HOLON_HOME": str(self.home),
            "HOLON_EXAMPLES": "off",
        }
        env.pop(KILL_AT_CALL, None)
        if kill_at is not None:
            env[KILL_AT_CALL] = str(kill_at)
        return env

    def spawn(self, *argv: str, kill_at: int | None = None) -> subprocess.Popen[str]:
        """A real `holon` process on this store (the agent dies with it at call `kill_at`)."""
        return subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", *argv],
            env=self.env(kill_at),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def cli(self, *argv: str) -> Result:
        """`holon …` in-process, on this store."""
        run = CLI(self.home, HOLON_DATABASE_URL=self.url, HOLON_SECRET_KEY=self.key)
        return run(*argv)

    def eval_ids(self) -> set[str]:
        return {e.id for e in self.store.evals.list(limit=200).items}

    def done_cells(self, eval_id: str) -> dict[int, tuple[Any, ...]]:
        return {
            c.idx: (c.fence, c.recorded_by, c.finished_at, c.outcome_code)
            for c in self.store.evals.cells(eval_id)
            if c.status == "done"
        }

    def recordings(self, eval_id: str) -> Counter[int]:
        """How many times each cell of the eval had a result written (the audit trigger)."""
        with self.store.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT idx, count(*) FROM fault_audit WHERE eval_id = :e GROUP BY idx"),
                {"e": eval_id},
            )
            return Counter({int(idx): int(n) for idx, n in rows})


@dataclass(frozen=True)
class Reference:
    """An uninterrupted eval's record (minus its id and times) and per-cell grades."""

    record: dict[str, Any]
    cells: dict[int, tuple[Any, ...]]


def open_campaign(url: str, tmp_path: Path) -> Campaign:
    """Set up the store at `url`: suite, agent, audit trigger; then a reference run."""
    key = new_key().decode()
    store = open_store(url, secret_key=key, auto_upgrade=True)
    with store.engine.begin() as conn:
        statements = _AUDIT_POSTGRES if store.dialect == "postgresql" else _AUDIT_SQLITE
        for statement in statements:
            conn.execute(text(statement))
    suite = make_suite(
        tmp_path,
        suite_yaml=SUITE_YAML.replace("threshold: 0.8\n", "threshold: 0.8\nrepetitions: 2\n"),
        public=_cases("p", "Cannot log in", "account", "billing"),
        holdout=_cases("h", "Refund please", "billing", "account"),
    )
    install_suite(store, suite)
    manifest = load_manifest(TRIAGE).to_json()
    manifest["endpoint"] = ENDPOINT
    store.agents.register(manifest)
    campaign = Campaign(store, url, key, tmp_path / "home")
    campaign.reference = _reference(campaign)
    return campaign


def _reference(campaign: Campaign) -> Reference:
    store, home = campaign.store, campaign.home
    plan = make_plan(store, AGENT, home=home, concurrency=4)
    assert plan.full and plan.cells_total == CELLS
    info = work(store, plan, start(store, plan), home=home)
    assert info.status == "done" and info.result is not None
    assert set(campaign.recordings(info.id).values()) == {1}
    return Reference(strip(info.result["record"]), grades(store, info.id))


def strip(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in VOLATILE}


def grades(store: Store, eval_id: str) -> dict[int, tuple[Any, ...]]:
    return {
        c.idx: (c.suite_id, c.split, c.case_id, c.repetition, c.outcome_code, c.passed, c.checks)
        for c in store.evals.cells(eval_id)
    }


def check(campaign: Campaign, eval_id: str, before: dict[int, tuple[Any, ...]]) -> None:
    """The campaign's invariants for one faulted-then-resumed eval (see the module doc)."""
    store = campaign.store
    reference = campaign.reference
    assert reference is not None
    info = store.evals.get(eval_id)
    assert info.status == "done", f"eval {eval_id} is {info.status} after the resume"
    cells = store.evals.cells(eval_id)
    lost = [c.idx for c in cells if c.status != "done" or c.outcome_code is None]
    assert not lost, f"cells without a recorded outcome: {lost}"
    assert sorted(c.idx for c in cells) == list(range(CELLS)) and info.cells_total == CELLS
    recordings = campaign.recordings(eval_id)
    duplicated = {idx: n for idx, n in recordings.items() if n != 1}
    assert not duplicated, f"cells recorded more than once: {duplicated}"
    assert set(recordings) == set(range(CELLS))
    after = campaign.done_cells(eval_id)
    changed = [idx for idx, seen in before.items() if after[idx] != seen]
    assert not changed, f"cells done before the resume were recorded again: {changed}"
    assert grades(store, eval_id) == reference.cells
    assert info.result is not None
    assert strip(info.result["record"]) == reference.record
    history = [r for r in store.evals.record_history(AGENT) if r.eval_id == eval_id]
    assert len(history) == 1 and strip(history[0].to_json()) == reference.record
    TALLY["trials"] += 1
    TALLY["cells checked"] += len(cells)
    TALLY["cells done before the resume"] += len(before)
