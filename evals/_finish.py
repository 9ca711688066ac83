"""Finishing an eval (docs/evals.md, "The run", step 6): scores, overfit verdicts, the record.

Computed from the cells in the database, never from a runner's memory, so
a resumed eval finishes exactly as one that never crashed. The record is
written, with the eval's result, in one transaction, and only by a complete
full-plan eval.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
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


class _Summary:
    """`summarise`'s counts, added to a cell at a time: bounded whatever the eval's size
    (the latencies as an array of doubles, 8 bytes a cell)."""

    def __init__(self) -> None:
        self.cells = 0
        self.done = 0
        self.passed = 0
        self.outcomes: Counter[str] = Counter()
        self.cost = Decimal(0)
        self.latencies = array("d")

    def add(self, cell: RecordedCell) -> None:
        self.cells += 1
        if cell.status != CellStatus.DONE:
            return
        self.done += 1
        self.passed += 1 if cell.passed else 0
        if cell.outcome_code:
            self.outcomes[cell.outcome_code] += 1
        if cell.cost_usd:
            self.cost += Decimal(cell.cost_usd)
        if cell.latency_ms is not None:
            self.latencies.append(cell.latency_ms)

    def to_json(self) -> dict[str, Any]:
        latencies = self.latencies
        return {
            "cells": self.cells,
            "done": self.done,
            "passed": self.passed,
            "outcomes": dict(sorted(self.outcomes.items())),
            # Text, as every money field: a stored JSON number would come back as a float.
            "cost_usd": str(self.cost),
            "latency_ms": {
                "p50": rounded_ms(nearest_rank(latencies, 50)),
                "p95": rounded_ms(nearest_rank(latencies, 95)),
                "max": round(max(latencies), 1) if latencies else None,
            },
        }


def summarise(cells: Iterable[RecordedCell]) -> dict[str, Any]:
    """Outcome counts, cost and latency over recorded cells (stored rows, or an imported
    report's cells: anything with their status, outcome, passed, cost and latency)."""
    summary = _Summary()
    for cell in cells:
        summary.add(cell)
    return summary.to_json()


_Tallies = dict[tuple[str, str, str], list[int]]  # (suite, split, case) -> [passes, runs]


def _tally(per_case: _Tallies, cell: RecordedCell) -> None:
    tally = per_case.setdefault((cell.suite_id, cell.split, cell.case_id), [0, 0])
    tally[0] += 1 if cell.passed else 0
    tally[1] += 1


def _suite_counts(plan: Plan, per_case: _Tallies) -> list[SuiteCounts]:
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


def suite_counts(plan: Plan, cells: Iterable[RecordedCell]) -> list[SuiteCounts]:
    per_case: _Tallies = {}
    for cell in cells:
        _tally(per_case, cell)
    return _suite_counts(plan, per_case)


def finish(store: Store, plan: Plan, info: EvalInfo) -> EvalInfo:
    """Score a complete eval and, for a full plan, write the agent record."""
    # One pass over the cells, a page at a time: what scoring and the summaries need is
    # counted as they go by, so finishing holds no eval whole.
    per_case: _Tallies = {}
    whole, public = _Summary(), _Summary()
    for cell in store.evals.scored_cell_pages(info.id):
        if cell.status != CellStatus.DONE:
            raise Refused(f"eval {info.id} is not complete", hint=f"holon evals resume {info.id}")
        _tally(per_case, cell)
        whole.add(cell)
        if cell.split == "public":
            public.add(cell)
    score = score_eval(list(plan.agent.capabilities), _suite_counts(plan, per_case))
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
        "summary": whole.to_json(),
        # What an author may read of the run: its public cells (docs/integrity.md).
        "public_summary": public.to_json(),
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
