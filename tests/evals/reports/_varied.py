"""Evals of the report tests' tiny suite with seeded-random cells, for comparing in pairs.

Each eval is planned as the echo agent's (`make_plan`, `start`) and its cells are
claimed and recorded straight through the records API with outcomes drawn from a
seeded `random.Random`: outcome codes, passes (each case with its own pass rate, so
cases improve and regress between evals), check results with and without metrics,
costs known each way, latencies. Some evals stop before every cell is recorded
(running, or cancelled); some run another number of repetitions, against a rotated
holdout or another version of the suite: every pair of them is a comparison to make.
"""

from __future__ import annotations

import copy
import random
from decimal import Decimal
from pathlib import Path
from typing import Any

from evals import make_plan, start
from evals.suites import install_suite
from records import CellResultRow, Store
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import HOLDOUT_CASES, PUBLIC_CASES, run_eval, setup, suite_dir
from tests.evals.suites._make import SUITE_YAML, case

CODES = ("ok", "ok", "ok", "ok", "agent_error", "timeout", "invalid_response", "cost_exceeded")
# How an eval's costs were known: a delta is withheld unless both sides knew them alike.
SOURCES = (("priced",), ("priced",), ("priced", "none"), ("reported",), ("priced", "reported"))
METRICS = ("similarity", "f1", "matched_nodes")
# Every eval here grades the holdout: more of them than an epoch's budget allows by default.
OPEN_YAML = SUITE_YAML.replace(
    'limits: {max_cost_usd: "0.01", timeout_s: 5}',
    'limits: {max_cost_usd: "0.01", timeout_s: 5, holdout_evals_per_epoch: 40,'
    " holdout_evals_per_instance_set: 40}",
)
_LABEL = {"name": "label", "predicate": "equals", "status": "pass", "passed": True}


def _checks(rng: random.Random, template: list[Any] | None) -> list[Any]:
    # A case the echo agent failed to answer has no results to copy: the label check's.
    checks = copy.deepcopy(template or [_LABEL])
    for result in checks:
        verdict = rng.random()
        result["passed"] = verdict < 0.75
        result["status"] = "pass" if verdict < 0.75 else "error" if verdict > 0.95 else "fail"
        if rng.random() < 0.4:
            result["metrics"] = {
                rng.choice(METRICS): round(rng.random(), rng.choice((1, 3, 6))),
                "f1": Decimal(rng.randint(0, 1000)) / 1000,
            }
    if rng.random() < 0.2:  # a case's own check, only now and then
        checks.append({**copy.deepcopy(checks[-1]), "name": rng.choice(("own", "extra"))})
    return checks


def _row(
    rng: random.Random, idx: int, fence: int, template: Any, share: float, sources: tuple[str, ...]
) -> CellResultRow:
    code = rng.choice(CODES)
    outcome = copy.deepcopy(template.outcome)
    outcome["code"] = code
    outcome["cost_source"] = rng.choice(sources)
    outcome["grade_ms"] = Decimal(rng.randint(1, 900)) / 1000
    if rng.random() < 0.3:
        outcome.pop("usage", None)
    checks = _checks(rng, template.checks) if code == "ok" else None
    passed = code == "ok" and rng.random() < share
    cost = Decimal(rng.randint(0, 5000)) / 10**7
    latency = round(rng.uniform(0.1, 80.0), rng.choice((1, 3, 9)))
    return CellResultRow(
        idx, fence, code, passed, format(cost, "f"), latency, 1, outcome, template.output, checks
    )


def random_eval(
    store: Store,
    home: Path,
    rng: random.Random,
    templates: dict[tuple[str, str], Any],
    *,
    repetitions: int | None = None,
    recorded: float = 1.0,
    ending: str = "finish",
) -> str:
    """An eval of the echo agent's plan with random results; `recorded` of its cells
    recorded, then finished (`ending` "finish", every cell recorded), cancelled or left
    running. Its id."""
    plan = make_plan(store, AGENT_ID, home=home, repetitions=repetitions)
    info = start(store, plan)
    shares: dict[str, float] = {}
    sources = rng.choice(SOURCES)
    rows = []
    for cell in store.evals.claim(info.id, "test:1:compare", 10_000, 3600):
        if rng.random() >= recorded:
            continue
        share = shares.setdefault(cell.case_id, rng.choice((0.0, 0.3, 0.7, 1.0)))
        template = templates.get((cell.split, cell.case_id)) or next(iter(templates.values()))
        rows.append(_row(rng, cell.idx, cell.fence, template, share, sources))
    store.evals.record(info.id, rows)
    if ending == "finish":
        store.evals.finish(info.id, result={}, record=None)
    elif ending == "cancel":
        store.evals.cancel(info.id)
    return info.id


def varied_evals(store: Store, root: Path, seed: int) -> list[str]:
    """Evals of one store to compare in pairs: real ones of the echo agent, random ones
    of every kind above; their ids."""
    rng = random.Random(seed)
    setup(store, root, suite_yaml=OPEN_YAML)
    home = root / "home"
    real = run_eval(store, home)
    templates = {(row.split, row.case_id): row for row in store.evals.cells(real)}
    ids = [real, run_eval(store, home, repetitions=2)]
    for repetitions, recorded, ending in (
        (1, 1.0, "finish"),
        (3, 1.0, "finish"),
        (3, 1.0, "finish"),
        (3, 0.6, "running"),
        (1, 0.5, "cancel"),
        (2, 1.0, "finish"),
    ):
        ids.append(
            random_eval(
                store,
                home,
                rng,
                templates,
                repetitions=repetitions,
                recorded=recorded,
                ending=ending,
            )
        )
    store.suites.rotate_holdout("tiny")
    ids.append(random_eval(store, home, rng, templates, repetitions=3))
    changed = OPEN_YAML.replace("\nversion: 1\n", "\nversion: 2\n")
    public = [*PUBLIC_CASES[1:], case("pub-new", "new", "new", tags=["critical"])]
    install_suite(
        store,
        suite_dir(root / "v2", public=public, holdout=HOLDOUT_CASES, suite_yaml=changed),
        activate=True,
    )
    ids.append(random_eval(store, home, rng, templates, repetitions=3))
    ids.append(random_eval(store, home, rng, templates, repetitions=3, recorded=0.8))
    return ids
