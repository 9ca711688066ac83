"""The overfit warning on real agents, end to end: the cheat is caught, the honest are not.

shady/memorizer learnt the public cases of the shipped ticket-classify suite
by heart (examples/agents/shady_memorizer.py). A full eval on that suite,
with its generated holdout, must leave a `warn` verdict and an `overfit`
warning with the numbers on its record: what `deny_on_overfit` mandates read.
acme/ticket-triage, evaluated the same way, must not be warned.

The store's holdout secret is pinned, so the generated holdout is the same
60 tickets on every run (a random secret would make the honest agent's
verdict a draw, however unlikely a bad one).

A second suite has splits that are equally hard by construction: both are
`ticket` generator instances with the shipped suite's params and checks,
public seeds 1-50 and holdout seeds 1001-1050 (a stored holdout file).
Neither agent is warned there, the memorizer included, which has nothing of
that suite to remember: the warning follows the cheat, not the agent.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from agents import load_manifest
from evals import make_plan, start, work
from evals.suites import install_suite
from examples.agents import shady_memorizer
from records import Store
from records._models import StoreSecret
from records._suites import HOLDOUT_SECRET

ROOT = Path(__file__).resolve().parents[3]
SHIPPED = ROOT / "examples" / "suites" / "ticket-classify"
MEMORIZER = ROOT / "examples" / "agents" / "shady-memorizer.yaml"
TRIAGE = ROOT / "examples" / "agents" / "acme-ticket-triage.yaml"

BALANCED_YAML = """\
schema_version: 1
id: ticket-generated
version: 1
capability: ticket.classify
title: Generated tickets on both splits (equally hard public and holdout)
input_schema: {$ref: schemas/input.json}
output_schema: {$ref: schemas/output.json}
limits: {max_cost_usd: "0.002", timeout_s: 10}
threshold: 0.7
overfit: {delta: 0.15}
checks:
  - {name: label, path: $.output.label, equals: {path: $.expected.label},
     normalize: [strip, casefold]}
  - {name: priority, path: $.output.priority, equals: {path: $.expected.priority},
     normalize: [strip, casefold]}
  - {name: product, path: $.output.product, equals: {path: $.expected.product},
     normalize: [strip, casefold]}
fixtures:
  ticket: {generator: ticket, params: {noise: 0.3, misleading: 0.25}}
public: {file: cases/public.jsonl}
holdout: {file: cases/holdout.jsonl}
"""


def _pin_holdout_secret(store: Store) -> None:
    """Create the store's holdout secret before its first use, with a fixed value."""
    with store.write() as session:
        session.add(
            StoreSecret(
                name=HOLDOUT_SECRET,
                value=b"tests/evals/runner/test_overfit_agents.py",
                created_at=datetime.now(UTC),
            )
        )
    assert store.suites.holdout_secret() == b"tests/evals/runner/test_overfit_agents.py"


def _register(store: Store, *manifests: Path) -> None:
    for manifest in manifests:
        store.agents.register(load_manifest(manifest).to_json())


def _evaluate(store: Store, agent_id: str, home: Path) -> dict[str, Any]:
    """A full eval of `agent_id`; the record it wrote (checked to be the eval's own)."""
    plan = make_plan(store, agent_id, home=home, concurrency=8)
    assert plan.full
    info = work(store, plan, start(store, plan), home=home)
    assert info.status == "done" and info.result is not None
    record = store.evals.current_record(agent_id)
    assert record is not None and record.eval_id == info.id
    assert record.to_json() == info.result["record"]
    assert info.result["summary"]["outcomes"] == {"ok": plan.cells_total}
    return record.to_json()


def _balanced_suite(root: Path) -> Path:
    directory = root / "ticket-generated"
    (directory / "cases").mkdir(parents=True)
    shutil.copytree(SHIPPED / "schemas", directory / "schemas")
    (directory / "suite.yaml").write_text(BALANCED_YAML)
    for split, first in (("public", 1), ("holdout", 1001)):
        lines = [
            json.dumps(
                {
                    "id": f"{split}-{seed}",
                    "input": {"$fixture": "ticket", "seed": seed},
                    "expected": {"$truth": "ticket", "seed": seed},
                    "tags": [],
                }
            )
            for seed in range(first, first + 50)
        ]
        (directory / "cases" / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return directory


def test_the_memorizer_is_warned_and_the_honest_agent_is_not(store: Store, tmp_path: Path) -> None:
    _pin_holdout_secret(store)
    install_suite(store, SHIPPED)
    _register(store, MEMORIZER, TRIAGE)
    home = tmp_path / "home"
    record = _evaluate(store, "shady/memorizer", home)

    suite = record["suites"]["ticket-classify"]
    public, holdout, overfit = suite["public"], suite["holdout"], suite["overfit"]
    # Every public case answered from memory; the unseen holdout mostly missed.
    assert public == {
        "passed": 50,
        "total": 50,
        "rate": Decimal(1),
        "ci95": [Decimal("0.9286"), Decimal(1)],
    }
    assert holdout["total"] == 60 and holdout["rate"] <= Decimal("0.5")
    assert record["eval_score"] == holdout["rate"] and record["weakest_suite"] == "ticket-classify"

    assert overfit["verdict"] == "warn"
    assert overfit["gap"] == public["rate"] - holdout["rate"] >= overfit["delta"] == Decimal("0.15")
    assert overfit["p_value"] < Decimal("0.025") and overfit["tests"] == 1
    assert Decimal(0) < overfit["newcombe_ci95"][0] <= overfit["gap"]
    assert overfit["public"] == {"rate": public["rate"], "total": 50}
    assert overfit["holdout"] == {"rate": holdout["rate"], "total": 60}

    # The deny material: what mandates with deny_on_overfit read.
    (warning,) = record["warnings"]
    assert warning["code"] == "overfit" and warning["suite"] == "ticket-classify"
    percent = f"{holdout['rate'] * 100:.1f}%"
    assert warning["detail"].startswith(f"public 100.0% of 50 cases, holdout {percent} of 60: gap")
    assert f"p = {overfit['p_value']}" in warning["detail"]
    history = store.evals.record_history("shady/memorizer")
    assert [r.eval_id for r in history] == [record["eval_id"]]

    # The honest agent, on the very same cases: no warning on its record.
    honest = _evaluate(store, "acme/ticket-triage", home)
    suite = honest["suites"]["ticket-classify"]
    assert suite["public"]["total"] == 50 and suite["holdout"]["total"] == 60
    assert suite["overfit"]["verdict"] != "warn", suite["overfit"]
    assert honest["warnings"] == []
    assert honest["eval_score"] > record["eval_score"]


def test_no_warning_where_public_and_holdout_are_equally_hard(store: Store, tmp_path: Path) -> None:
    install_suite(store, _balanced_suite(tmp_path))
    _register(store, MEMORIZER, TRIAGE)
    home = tmp_path / "home"
    for agent_id in ("acme/ticket-triage", "shady/memorizer"):
        record = _evaluate(store, agent_id, home)
        suite = record["suites"]["ticket-generated"]
        assert suite["public"]["total"] == 50 and suite["holdout"]["total"] == 50
        assert suite["overfit"]["verdict"] != "warn", (agent_id, suite["overfit"])
        assert record["warnings"] == [], agent_id
    # The honest agent does real work on both splits; the memorizer only guesses.
    triage = store.evals.current_record("acme/ticket-triage")
    memorizer = store.evals.current_record("shady/memorizer")
    assert triage is not None and memorizer is not None
    assert triage.eval_score > memorizer.eval_score


def test_the_memorizer_matches_text_not_meaning(tmp_path: Path) -> None:
    public = tmp_path / "public.jsonl"
    seen = {"subject": "Card declined", "body": "My card was declined at checkout."}
    cases = [
        {
            "id": "a",
            "input": seen,
            "expected": {"label": "bug", "priority": "high", "product": "shop"},
        },
        {"id": "b", "input": {"$fixture": "ticket", "seed": 1}, "expected": {}},
    ]
    public.write_text("".join(json.dumps(c) + "\n" for c in cases))
    memory = shady_memorizer.memorize(public)
    assert len(memory) == 1  # a fixture reference has no text to recognise
    remembered = {"label": "bug", "priority": "high", "product": "shop"}
    assert shady_memorizer.answer(
        memory, "card  DECLINED", "My card was declined\nat checkout."
    ) == (remembered)
    # One word changed, and it is a stranger: the crude guess.
    assert shady_memorizer.answer(memory, "Card declined", "My card was refused at checkout.") == {
        "label": "other",
        "priority": "normal",
        "product": "general",
    }
    # The shipped public cases are what the app remembers.
    assert len(shady_memorizer.memorize()) == 50
