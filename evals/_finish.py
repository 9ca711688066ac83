"""Finishing an eval (docs/evals.md, "The run", step 6): scores, overfit verdicts, the record.

Computed from the cells in the database, never from a runner's memory, so
a resumed eval finishes exactly as one that never crashed. The record is
written, with the eval's result, in one transaction, and only by a complete
full-plan eval.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from decimal import Decimal
from typing import Any, Protocol

from agents import CARD_PROTOCOLS
from evals._integrity import author_record, keyed_digest
from evals._plan import Plan
from evals._scores import SuiteCounts, score_eval
from evals._stats import nearest_rank, rounded_ms
from evals.suites import DEFAULT_ROTATE_MIN_HOURS, Suite
from records import AgentRecord, CellStatus, Certify, EvalInfo, Store, utc_text, utcnow
from schema.errors import Refused


class RecordedCell(Protocol):
    """What summaries and scores read of a cell: a stored one (`records.ScoredCell`) or an
    imported report's (`evals.reports._data.CellData`), so neither is converted to the other."""

    @property
    def suite_id(self) -> str: ...
    @property
    def split(self) -> str: ...
    @property
    def case_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def passed(self) -> bool | None: ...
    @property
    def outcome_code(self) -> str | None: ...
    @property
    def cost_usd(self) -> str | Decimal | None: ...
    @property
    def latency_ms(self) -> float | None: ...


def summarise(cells: Sequence[RecordedCell]) -> dict[str, Any]:
    """Outcome counts, cost and latency over recorded cells (stored rows, or an imported
    report's cells: anything with their status, outcome, passed, cost and latency)."""
    done = [c for c in cells if c.status == CellStatus.DONE]
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


def suite_counts(plan: Plan, cells: Sequence[RecordedCell]) -> list[SuiteCounts]:
    per_case: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    for cell in cells:
        tally = per_case[(cell.suite_id, cell.split, cell.case_id)]
        tally[0] += 1 if cell.passed else 0
        tally[1] += 1
    ordered = sorted(per_case.items())  # by suite, split and case id, sorted once
    return [
        SuiteCounts.of(
            suite,
            [
                (split, passes, runs)
                for (sid, split, _), (passes, runs) in ordered
                if sid == suite.id
            ],
        )
        for suite in (planned.suite for planned in plan.suites)
    ]


def finish(store: Store, plan: Plan, info: EvalInfo) -> EvalInfo:
    """Score a complete eval and, for a full plan, write the agent record."""
    cells = store.evals.scored_cells(info.id)
    if any(c.status != CellStatus.DONE for c in cells):
        raise Refused(f"eval {info.id} is not complete", hint=f"holon evals resume {info.id}")
    score = score_eval(list(plan.agent.capabilities), suite_counts(plan, cells))
    record = AgentRecord.from_json(
        {
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
    )
    result = {
        "record": record.to_json(),
        "summary": summarise(cells),
        # What an author may read of the run: its public cells (docs/integrity.md).
        "public_summary": summarise([c for c in cells if c.split == "public"]),
        "meets_thresholds": all(s.meets_threshold for s in score.suites.values()),
    }
    rotate = [
        (p.suite.id, p.suite.version, p.rotate_after_evals, _min_hours(p.suite))
        for p in plan.suites
        if p.holdout
    ]
    return store.evals.finish(
        info.id,
        result=result,
        record=record if plan.full else None,
        rotate=rotate,
        certify=certify(store, plan, record) if plan.full else None,
    )


def _min_hours(suite: Suite) -> int:
    rotation = suite.rotation
    return DEFAULT_ROTATE_MIN_HOURS if rotation is None else rotation.rotate_min_hours


def certify(store: Store, plan: Plan, record: AgentRecord) -> Certify:
    """What the record's certificate says (docs/certificates.md): the record as an author
    may read it (no holdout epochs, each holdout split its counts, rate and interval),
    with each suite's keyed digest and repetitions. A certificate travels to anyone, so it
    carries nothing an author may not see (docs/integrity.md)."""
    agent = plan.agent
    visible = author_record(record)
    shown = visible.to_json()  # the certificate carries the record's JSON, as an author reads it
    secret = store.suites.holdout_secret()
    planned = {p.suite.id: p for p in plan.suites}
    suites = {
        suite_id: {
            **graded,
            "suite_digest": keyed_digest(secret, planned[suite_id].suite_digest),
            "repetitions": planned[suite_id].repetitions,
        }
        for suite_id, graded in shown["suites"].items()
    }
    verdicts = [graded.overfit.verdict for graded in visible.suites.values()]
    card = None
    if agent.protocol in CARD_PROTOCOLS:
        identity = store.identities.get(agent.id, agent.version)
        card = None if identity is None else identity.card_digest
    return Certify(
        manifest=agent.to_json(),
        card_digest=card,
        predicate={
            "eval_id": shown["eval_id"],
            "evaluated_at": shown["evaluated_at"],
            "capabilities": sorted(
                graded.capability for graded in visible.suites.values() if graded.score is not None
            ),
            "unverified_capabilities": shown["unverified_capabilities"],
            "eval_score": shown["eval_score"],
            "eval_score_ci95": shown["eval_score_ci95"],
            "weakest_suite": shown["weakest_suite"],
            "overfit": "warn" if "warn" in verdicts else "ok",
            "warnings": shown["warnings"],
            "suites": suites,
            # The lower-bound gate's k at issue (docs/integrity.md shows it to authors).
            "holdout_evals": store.exposure.revealed(suites),
        },
    )
