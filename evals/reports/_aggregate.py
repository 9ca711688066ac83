"""Aggregates over recorded cells, each with its sample (`n`) and what is missing from it.

The case is the unit of rates (docs/evals.md, "Scores"): a case scores passes /
recorded runs, and a split's rate and Wilson interval come from
`evals._scores.split_score`, the very function that scored the record. A case
none of whose cells is recorded yet (an eval still running, or cancelled) is
missing from the sample, not a failure. Per-check rates count cells, and
only the graded ones (outcome `ok`): "graded n of N", N = n + missing.
"""

from __future__ import annotations

import re  # noqa: TID251  (a fixed ASCII pattern: nothing to backtrack)
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from agents import OutcomeCode
from evals._scores import split_score
from evals._stats import mean_interval, nearest_rank, rounded
from evals.checks import METRICS, CheckStatus
from evals.reports._data import CellData, SuiteData
from evals.reports._values import text_of

__all__ = [
    "CASE_SPECIFIC",
    "OUTCOME_CODES",
    "CaseTally",
    "check_rows",
    "cost_block",
    "errored_cells",
    "grading_block",
    "latency_block",
    "outcome_block",
    "rate",
    "rate_block",
    "raised",
    "tag_rows",
    "tally_cases",
    "usage_block",
]

# Every outcome code, in the order reports list them (zeros included).
OUTCOME_CODES: tuple[OutcomeCode, ...] = (
    "ok",
    "agent_error",
    "timeout",
    "invalid_response",
    "cost_exceeded",
    "unreachable",
)
COST_SOURCES = ("priced", "reported", "none")
CASE_SPECIFIC = "case-specific checks"
METRICS_PER_CHECK = 20  # a check reports a handful; a stored result may hold anything
METRIC_DIGITS = 15  # a metric of 10**15 or more is not one
METRIC_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def rate(value: Fraction | None) -> Decimal | None:
    return None if value is None else rounded(value)


@dataclass
class CaseTally:
    """One case of one split: its cells in repetition order."""

    suite_id: str
    split: str
    case_id: str
    case_digest: str
    tags: tuple[str, ...]
    cells: list[CellData] = field(default_factory=list)

    @property
    def runs(self) -> int:
        """Recorded runs (the denominator of the case's score)."""
        return sum(1 for c in self.cells if c.done)

    @property
    def passes(self) -> int:
        return sum(1 for c in self.cells if c.done and c.passed)

    @property
    def score(self) -> Fraction | None:
        return Fraction(self.passes, self.runs) if self.runs else None

    @property
    def critical(self) -> bool:
        return "critical" in self.tags


def tally_cases(cells: Iterable[CellData]) -> list[CaseTally]:
    """Cases in the order of their first cell (the plan's order)."""
    cases: dict[tuple[str, str, str], CaseTally] = {}
    for cell in cells:
        key = (cell.suite_id, cell.split, cell.case_id)
        tally = cases.get(key)
        if tally is None:
            tally = cases[key] = CaseTally(
                cell.suite_id, cell.split, cell.case_id, cell.case_digest, cell.tags
            )
        tally.cells.append(cell)
    for tally in cases.values():
        tally.cells.sort(key=lambda c: (c.repetition, c.idx))
    return list(cases.values())


def rate_block(cases: Sequence[CaseTally]) -> dict[str, Any]:
    """Cases scored (n), cases with no recorded run (missing), x, rate, Wilson interval."""
    scored = [(c.passes, c.runs) for c in cases if c.runs]
    split = split_score(scored)
    cells = [cell for c in cases for cell in c.cells]
    recorded = sum(1 for cell in cells if cell.done)
    block: dict[str, Any] = {
        "cases": len(cases),
        "n": len(scored),
        "missing": len(cases) - len(scored),
        "passed": None,
        "rate": None,
        "ci95": None,
        "stability": None,
        "cells": {"n": recorded, "missing": len(cells) - recorded},
    }
    if split is not None:
        low, high = split.ci95
        block.update(
            passed=int(split.x) if split.x.denominator == 1 else rounded(split.x),
            rate=rounded(split.rate),
            ci95=[rounded(low), rounded(high)],
            stability=None if split.stability is None else rounded(split.stability),
        )
    return block


def tag_rows(cases: Sequence[CaseTally]) -> list[dict[str, Any]]:
    """One rate block per tag, tags in sorted order."""
    by_tag: dict[str, list[CaseTally]] = {}
    for case in cases:
        for tag in dict.fromkeys(case.tags):
            by_tag.setdefault(tag, []).append(case)
    return [{"tag": tag, **rate_block(by_tag[tag])} for tag in sorted(by_tag)]


@dataclass
class _CheckTally:
    name: str
    scope: str  # "suite" | "case"
    critical: bool = False
    graded: int = 0
    passed: int = 0
    errors: int = 0  # cells where the check raised: neither a pass nor a failure
    # metric name -> case id -> the metric's values over that case's graded cells
    metrics: dict[str, dict[str, list[Decimal]]] = field(default_factory=dict)

    def add_metrics(self, case_id: str, values: Any) -> None:
        if not isinstance(values, dict):
            return
        for name, value in values.items():
            number = _metric_value(value)
            # The grader names its metrics (f1, similarity …); a stored result may hold
            # any key, and a key is text a report shows: only short identifiers count.
            if number is None or not isinstance(name, str) or not METRIC_NAME.fullmatch(name):
                continue
            if name not in self.metrics and len(self.metrics) >= METRICS_PER_CHECK:
                continue
            self.metrics.setdefault(name, {}).setdefault(case_id, []).append(number)


def _metric_value(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    number = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    # A metric is a share or a count; anything past this is not one (a stored
    # result may hold anything), and must not make the report's arithmetic overflow.
    # (`adjusted` reads the exponent: no arithmetic on a number that may overflow.)
    if not number.is_finite() or number.adjusted() >= METRIC_DIGITS:
        return None
    return number


def metric_block(by_case: dict[str, list[Decimal]], name: str) -> dict[str, Any]:
    """A metric over a check's graded cells: the case is the unit (its cells' mean), as for
    rates; the mean over cases with its 95% Student-t interval, and the extremes; with its
    declared direction and unit (both null for a name no predicate declares: a stored
    result may hold any)."""
    declared = METRICS.get(name)
    per_case = [sum(v, Decimal(0)) / len(v) for _, v in sorted(by_case.items())]
    mean, low, high = mean_interval(per_case)
    if low is not None and high is not None and declared is not None and declared.is_share:
        low, high = max(low, Decimal(0)), min(high, Decimal(1))
    return {
        "direction": None if declared is None else declared.direction,
        "unit": None if declared is None else declared.unit,
        "n": len(per_case),
        "mean": rounded(mean),
        "ci95": None if low is None or high is None else [rounded(low), rounded(high)],
        "min": rounded(min(per_case)),
        "max": rounded(max(per_case)),
    }


def check_rows(
    suite: SuiteData, cases: Sequence[CaseTally], *, lump_case_checks: bool = False
) -> list[dict[str, Any]]:
    """Per-check pass rates over graded cells, suite checks first, then the cases' own.

    A suite-level check belongs to every cell of the split (N = the split's
    cells); a case's own check to the cells of the cases it was seen in.
    `lump_case_checks` folds every case's own check into one row named
    `CASE_SPECIFIC` (a cell passes it when all its case's own checks pass):
    an author's view of the holdout, where a case's own check name could
    tell that case apart. Which results are the suite's own is known by
    position: every cell's results start with the suite's checks.
    """
    cells = [cell for c in cases for cell in c.cells]
    every = {cell.idx for cell in cells}
    leading = suite.suite_checks or 0
    tallies: dict[tuple[str, str], _CheckTally] = {}
    seen_in_case: dict[tuple[str, str], set[str]] = {}

    def tally_of(key: tuple[str, str]) -> _CheckTally:
        tally = tallies.get(key)
        if tally is None:
            tally = tallies[key] = _CheckTally(key[1], key[0])
        return tally

    for cell in cells:
        if not cell.graded or cell.checks is None:
            continue
        # One entry per (scope, name) and cell: the folded row passes a cell
        # only when every own check of its case passed there.
        entries: dict[tuple[str, str], list[bool]] = {}
        for position, result in enumerate(cell.checks):
            scope = "suite" if position < leading else "case"
            name = text_of(result.get("name", ""))
            lumped = scope == "case" and lump_case_checks
            if lumped:
                name = CASE_SPECIFIC
            key = (scope, name)
            verdict = entries.setdefault(key, [True, False, False])
            verdict[0] = verdict[0] and result.get("passed") is True
            verdict[1] = verdict[1] or result.get("critical") is True
            verdict[2] = verdict[2] or raised(result)
            if not lumped:  # a folded row's checks measure different things
                tally_of(key).add_metrics(cell.case_id, result.get("metrics"))
        for key, (passed, critical, errored) in entries.items():
            tally = tally_of(key)
            tally.graded += 1
            tally.passed += 1 if passed else 0
            tally.errors += 1 if errored and not passed else 0
            tally.critical = tally.critical or critical
            seen_in_case.setdefault(key, set()).add(cell.case_id)
    rows = []
    for key, tally in sorted(tallies.items(), key=lambda kv: (kv[0][0] != "suite",)):
        if tally.scope == "suite":
            belongs = len(every)
        else:
            owners = seen_in_case[key]
            belongs = sum(len(c.cells) for c in cases if c.case_id in owners)
        rows.append(
            {
                "name": tally.name,
                "scope": tally.scope,
                "critical": tally.critical,
                "n": tally.graded,
                "missing": belongs - tally.graded,
                "passed": tally.passed,
                "errors": tally.errors,
                "rate": rate(Fraction(tally.passed, tally.graded)) if tally.graded else None,
                "metrics": {
                    name: metric_block(tally.metrics[name], name) for name in sorted(tally.metrics)
                },
            }
        )
    return rows


def raised(result: dict[str, Any]) -> bool:
    """Whether a check result is a check that raised (status `error`, evals.checks)."""
    return result.get("status") == CheckStatus.ERROR


def errored_cells(cells: Sequence[CellData]) -> int:
    """Graded cells where a check raised: not passed, and counted apart from failures."""
    return sum(1 for c in cells if c.graded and any(raised(r) for r in c.checks or ()))


def outcome_block(cells: Sequence[CellData]) -> dict[str, Any]:
    counts: dict[str, int] = dict.fromkeys(OUTCOME_CODES, 0)
    recorded = 0
    for cell in cells:
        if cell.done and cell.outcome_code is not None:
            recorded += 1
            counts[cell.outcome_code] = counts.get(cell.outcome_code, 0) + 1
    return {"n": recorded, "missing": len(cells) - recorded, "counts": counts}


def milliseconds(value: float) -> Decimal:
    """A latency as stored (a float) to 0.1 ms, exactly the same on every run of the report."""
    return Decimal(repr(value)).quantize(Decimal("0.1"))


def _spread(times: Sequence[float | None]) -> dict[str, Any]:
    """Nearest-rank p50 and p95 and the max of times in ms (None: one that was not kept)."""
    values = [milliseconds(t) for t in times if t is not None]
    return {
        "n": len(values),
        "missing": len(times) - len(values),
        "p50": nearest_rank(values, 50),
        "p95": nearest_rank(values, 95),
        "max": max(values) if values else None,
    }


def latency_block(cells: Sequence[CellData]) -> dict[str, Any]:
    return _spread([c.latency_ms if c.done else None for c in cells])


def grading_block(cells: Sequence[CellData]) -> dict[str, Any]:
    """How long grading took, beside the agent's latency: over graded, recorded cells."""
    return _spread([c.grade_ms for c in cells if c.done and c.outcome_code == "ok"])


def usage_block(cells: Sequence[CellData]) -> dict[str, Any]:
    """The tokens agents reported (usage), and over how many recorded cells they did: a
    total over half the cells is not the eval's consumption."""
    recorded = [c for c in cells if c.done]
    reported = [c for c in recorded if c.input_tokens is not None or c.output_tokens is not None]
    return {
        "n": len(recorded),
        "reported": len(reported),
        "coverage": rate(Fraction(len(reported), len(recorded))) if recorded else None,
        "input_tokens": sum(c.input_tokens or 0 for c in reported),
        "output_tokens": sum(c.output_tokens or 0 for c in reported),
    }


def cost_block(cells: Sequence[CellData]) -> dict[str, Any]:
    """Total cost in USD (exact Decimal text) and how it was known, by source."""
    sources = dict.fromkeys(COST_SOURCES, 0)
    total = Decimal(0)
    n = 0
    for cell in cells:
        if not cell.done or cell.cost_usd is None:
            continue
        n += 1
        total += cell.cost_usd
        source = cell.cost_source if cell.cost_source in sources else "none"
        sources[str(source)] += 1
    used = [s for s in COST_SOURCES if sources[s]]
    return {
        "n": n,
        "missing": len(cells) - n,
        "usd": format(total, "f"),  # positional: str() writes 0.0000000 as 0E-7
        "source": None if not used else used[0] if len(used) == 1 else "mixed",
        "sources": sources,
    }
