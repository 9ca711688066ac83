"""Finishing an eval (EVALS.md, step 6): scores, overfit verdicts and the agent record.

Computed from the cells in the database, never from a runner's memory, so
a resumed eval finishes exactly as one that never crashed. The record is
written, with the eval's result, in one transaction, and only by a complete
full-plan eval.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from evals._plan import Plan
from evals._scores import SuiteCounts, score_eval
from evals._stats import nearest_rank, rounded_ms
from records import EvalCell, EvalInfo, ScoredCell, Store, utc_text, utcnow
from schema.errors import Refused


def summarise(cells: Sequence[EvalCell | ScoredCell]) -> dict[str, Any]:
    """Outcome counts, cost and latency over recorded cells."""
    done = [c for c in cells if c.status == "done"]
    latencies = [c.latency_ms for c in done if c.latency_ms is not None]
    return {
        "cells": len(cells),
        "done": len(done),
        "passed": sum(1 for c in done if c.passed),
        "outcomes": dict(sorted(Counter(c.outcome_code for c in done if c.outcome_code).items())),
        # Text, as every money field: a stored JSON number would come back as a float.
        "cost_usd": str(sum((Decimal(c.cost_usd) for c in done if c.cost_usd), Decimal(0))),
        "latency_ms": {
            "p50": rounded_ms(nearest_rank(latencies, 50)),
            "p95": rounded_ms(nearest_rank(latencies, 95)),
            "max": round(max(latencies), 1) if latencies else None,
        },
    }


def suite_counts(plan: Plan, cells: Sequence[EvalCell | ScoredCell]) -> list[SuiteCounts]:
    per_case: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for cell in cells:
        tally = per_case[(cell.suite_id, cell.split, cell.case_id)]
        tally[0] += 1 if cell.passed else 0
        tally[1] += 1
    ordered = sorted(per_case.items())  # by suite, split and case id
    counts = []
    for planned in plan.suites:
        suite = planned.suite

        def split(name: str, suite_id: str = suite.id) -> list[tuple[int, int]]:
            return [
                (passes, runs)
                for (sid, sp, _), (passes, runs) in ordered
                if sid == suite_id and sp == name
            ]

        counts.append(
            SuiteCounts(
                suite_id=suite.id,
                version=suite.version,
                capability=suite.capability,
                threshold=suite.threshold,
                public=split("public"),
                holdout=split("holdout"),
                overfit_delta=suite.overfit_delta,
            )
        )
    return counts


def finish(store: Store, plan: Plan, info: EvalInfo) -> EvalInfo:
    """Score a complete eval and, for a full plan, write the agent record."""
    cells = store.evals.scored_cells(info.id)
    if any(c.status != "done" for c in cells):
        raise Refused(f"eval {info.id} is not complete", hint=f"holon evals resume {info.id}")
    score = score_eval(list(plan.agent.capabilities), suite_counts(plan, cells))
    record: dict[str, Any] = {
        "agent": plan.agent.id,
        "agent_version": plan.agent.version,
        "eval_id": info.id,
        "evaluated_at": utc_text(utcnow()),
        # Of two evals of one version, the record of the one that started last wins.
        "eval_started_at": utc_text(info.created_at),
        "stale": False,
        **score.to_json(),
        "holdout_epochs": {p.suite.id: p.epoch for p in plan.suites if p.holdout},
    }
    result = {
        "record": record,
        "summary": summarise(cells),
        # What an author may read of the run: its public cells (docs/integrity.md).
        "public_summary": summarise([c for c in cells if c.split == "public"]),
        "meets_thresholds": all(s.meets_threshold for s in score.suites.values()),
    }
    rotate = [(p.suite.id, p.suite.version, p.rotate_after_evals) for p in plan.suites if p.holdout]
    return store.evals.finish(
        info.id, result=result, record=record if plan.full else None, rotate=rotate
    )
