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
from array import array
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
    "CellTotals",
    "CheckTallies",
    "case_key",
    "check_rows",
    "in_case_order",
    "milliseconds",
    "rate",
    "rate_block",
    "raised",
    "tag_rows",
    "tally_cases",
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


@dataclass(slots=True)
class CaseTally:
    """One case of one split: how many of its cells were planned, recorded and passed
    (counted as they are read), and the cells themselves only when kept (`tally_cases`):
    a report counts, a comparison pairs cells."""

    suite_id: str
    split: str
    case_id: str
    case_digest: str
    tags: tuple[str, ...]
    cells: list[CellData] = field(default_factory=list)
    planned: int = 0
    runs: int = 0  # recorded runs (the denominator of the case's score)
    passes: int = 0

    @classmethod
    def first(cls, cell: CellData) -> CaseTally:
        """The case of `cell`, named as its first cell names it, with nothing counted."""
        return cls(cell.suite_id, cell.split, cell.case_id, cell.case_digest, cell.tags)

    def add(self, cell: CellData, *, keep: bool = False) -> None:
        self.planned += 1
        if cell.done:
            self.runs += 1
            self.passes += 1 if cell.passed else 0
        if keep:
            self.cells.append(cell)

    @property
    def score(self) -> Fraction | None:
        return Fraction(self.passes, self.runs) if self.runs else None

    @property
    def critical(self) -> bool:
        return "critical" in self.tags


def case_key(cell: CellData) -> tuple[str, str, str]:
    return (cell.suite_id, cell.split, cell.case_id)


def in_case_order(cells: list[CellData]) -> None:
    """A case's cells in repetition order (the plan writes them so)."""
    cells.sort(key=lambda c: (c.repetition, c.idx))


def tally_cases(cells: Iterable[CellData]) -> list[CaseTally]:
    """Cases in the order of their first cell (the plan's order), their cells kept."""
    cases: dict[tuple[str, str, str], CaseTally] = {}
    for cell in cells:
        key = case_key(cell)
        tally = cases.get(key)
        if tally is None:
            tally = cases[key] = CaseTally.first(cell)
        tally.add(cell, keep=True)
    for tally in cases.values():
        in_case_order(tally.cells)
    return list(cases.values())


def rate_block(cases: Sequence[CaseTally]) -> dict[str, Any]:
    """Cases scored (n), cases with no recorded run (missing), x, rate, Wilson interval."""
    scored = [(c.passes, c.runs) for c in cases if c.runs]
    split = split_score(scored)
    planned = sum(c.planned for c in cases)
    recorded = sum(c.runs for c in cases)
    block: dict[str, Any] = {
        "cases": len(cases),
        "n": len(scored),
        "missing": len(cases) - len(scored),
        "passed": None,
        "rate": None,
        "ci95": None,
        "stability": None,
        "cells": {"n": recorded, "missing": planned - recorded},
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
    # metric name -> case id -> [sum, count] of the metric over that case's graded cells
    metrics: dict[str, dict[str, list[Any]]] = field(default_factory=dict)

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
            total = self.metrics.setdefault(name, {}).setdefault(case_id, [Decimal(0), 0])
            total[0] += number
            total[1] += 1


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


def metric_block(by_case: dict[str, list[Any]], name: str) -> dict[str, Any]:
    """A metric over a check's graded cells: the case is the unit (its cells' mean), as for
    rates; the mean over cases with its 95% Student-t interval, and the extremes; with its
    declared direction and unit (both null for a name no predicate declares: a stored
    result may hold any)."""
    declared = METRICS.get(name)
    per_case = [total / count for _, (total, count) in sorted(by_case.items())]
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


class CheckTallies:
    """Per-check pass rates over graded cells, counted cell by cell (`add`, the cells of
    each case together and in order) and stated per check (`rows`): suite checks first,
    then the cases' own.

    A suite-level check belongs to every cell of the split (N = the split's
    cells); a case's own check to the cells of the cases it was seen in.
    `lump_case_checks` folds every case's own check into one row named
    `CASE_SPECIFIC` (a cell passes it when all its case's own checks pass):
    an author's view of the holdout, where a case's own check name could
    tell that case apart. Which results are the suite's own is known by
    position: every cell's results start with the suite's checks.
    """

    def __init__(self, suite: SuiteData, *, lump_case_checks: bool = False) -> None:
        self._leading = suite.suite_checks or 0
        self._lump = lump_case_checks
        self._tallies: dict[tuple[str, str], _CheckTally] = {}
        self._seen_in_case: dict[tuple[str, str], set[str]] = {}

    def _tally(self, key: tuple[str, str]) -> _CheckTally:
        tally = self._tallies.get(key)
        if tally is None:
            tally = self._tallies[key] = _CheckTally(key[1], key[0])
        return tally

    def add(self, cell: CellData) -> None:
        if not cell.graded or cell.checks is None:
            return
        # One entry per (scope, name) and cell: the folded row passes a cell
        # only when every own check of its case passed there.
        entries: dict[tuple[str, str], list[bool]] = {}
        for position, result in enumerate(cell.checks):
            scope = "suite" if position < self._leading else "case"
            name = text_of(result.get("name", ""))
            lumped = scope == "case" and self._lump
            if lumped:
                name = CASE_SPECIFIC
            key = (scope, name)
            verdict = entries.setdefault(key, [True, False, False])
            verdict[0] = verdict[0] and result.get("passed") is True
            verdict[1] = verdict[1] or result.get("critical") is True
            verdict[2] = verdict[2] or raised(result)
            if not lumped:  # a folded row's checks measure different things
                self._tally(key).add_metrics(cell.case_id, result.get("metrics"))
        for key, (passed, critical, errored) in entries.items():
            tally = self._tally(key)
            tally.graded += 1
            tally.passed += 1 if passed else 0
            tally.errors += 1 if errored and not passed else 0
            tally.critical = tally.critical or critical
            self._seen_in_case.setdefault(key, set()).add(cell.case_id)

    def rows(self, cases: Sequence[CaseTally]) -> list[dict[str, Any]]:
        """The rows, `cases` being those whose cells were added."""
        every = sum(c.planned for c in cases)
        rows = []
        for key, tally in sorted(self._tallies.items(), key=lambda kv: (kv[0][0] != "suite",)):
            if tally.scope == "suite":
                belongs = every
            else:
                owners = self._seen_in_case[key]
                belongs = sum(c.planned for c in cases if c.case_id in owners)
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
                        name: metric_block(tally.metrics[name], name)
                        for name in sorted(tally.metrics)
                    },
                }
            )
        return rows


def check_rows(
    suite: SuiteData, cases: Sequence[CaseTally], *, lump_case_checks: bool = False
) -> list[dict[str, Any]]:
    """`CheckTallies` rows of cases whose cells were kept (`tally_cases`)."""
    tallies = CheckTallies(suite, lump_case_checks=lump_case_checks)
    for case in cases:
        for cell in case.cells:
            tallies.add(cell)
    return tallies.rows(cases)


def raised(result: dict[str, Any]) -> bool:
    """Whether a check result is a check that raised (status `error`, evals.checks)."""
    return result.get("status") == CheckStatus.ERROR


def milliseconds(value: float) -> Decimal:
    """A latency as stored (a float) to 0.1 ms, exactly the same on every run of the report."""
    return Decimal(repr(value)).quantize(Decimal("0.1"))


def _spread(times: array[float], total: int) -> dict[str, Any]:
    """Nearest-rank p50 and p95 and the max of `times` in ms, of `total` cells (those
    missing: times not kept). Ranked as floats: `milliseconds` never reorders two."""
    ordered = sorted(times)
    p50, p95 = nearest_rank(ordered, 50), nearest_rank(ordered, 95)
    return {
        "n": len(times),
        "missing": total - len(times),
        "p50": None if p50 is None else milliseconds(p50),
        "p95": None if p95 is None else milliseconds(p95),
        "max": milliseconds(max(times)) if times else None,
    }


class CellTotals:
    """What a report sums over a group of cells, counted as they are read (`add`): outcomes,
    latency, grading time, usage, cost. Its size grows by two floats a cell (the times
    its percentiles rank), none of the cells' own values."""

    def __init__(self) -> None:
        self.planned = 0
        self.recorded = 0  # done
        self.passed = 0
        self.errors = 0  # graded, and a check raised
        self.outcomes: dict[str, int] = dict.fromkeys(OUTCOME_CODES, 0)
        self.with_outcome = 0
        self.latencies = array("d")
        self.graded_ok = 0  # done with outcome ok: grading's sample
        self.grade_times = array("d")
        self.reported = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.costed = 0
        self.cost = Decimal(0)
        self.sources: dict[str, int] = dict.fromkeys(COST_SOURCES, 0)

    @classmethod
    def of(cls, cells: Iterable[CellData]) -> CellTotals:
        totals = cls()
        for cell in cells:
            totals.add(cell)
        return totals

    def add(self, cell: CellData) -> None:
        self.planned += 1
        if not cell.done:
            return
        self.recorded += 1
        self.passed += 1 if cell.passed else 0
        if cell.graded and any(raised(r) for r in cell.checks or ()):
            self.errors += 1
        if cell.outcome_code is not None:
            self.with_outcome += 1
            self.outcomes[cell.outcome_code] = self.outcomes.get(cell.outcome_code, 0) + 1
        if cell.latency_ms is not None:
            self.latencies.append(cell.latency_ms)
        if cell.outcome_code == "ok":
            self.graded_ok += 1
            if cell.grade_ms is not None:
                self.grade_times.append(cell.grade_ms)
        if cell.input_tokens is not None or cell.output_tokens is not None:
            self.reported += 1
            self.input_tokens += cell.input_tokens or 0
            self.output_tokens += cell.output_tokens or 0
        if cell.cost_usd is not None:
            self.costed += 1
            self.cost += cell.cost_usd
            source = cell.cost_source if cell.cost_source in self.sources else "none"
            self.sources[str(source)] += 1

    def outcome_block(self) -> dict[str, Any]:
        counts = dict(self.outcomes)
        return {
            "n": self.with_outcome,
            "missing": self.planned - self.with_outcome,
            "counts": counts,
        }

    def latency_block(self) -> dict[str, Any]:
        return _spread(self.latencies, self.planned)

    def grading_block(self) -> dict[str, Any]:
        """How long grading took, beside the agent's latency: over graded, recorded cells."""
        return _spread(self.grade_times, self.graded_ok)

    def usage_block(self) -> dict[str, Any]:
        """The tokens agents reported (usage), and over how many recorded cells they did: a
        total over half the cells is not the eval's consumption."""
        recorded = self.recorded
        return {
            "n": recorded,
            "reported": self.reported,
            "coverage": rate(Fraction(self.reported, recorded)) if recorded else None,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
        }

    def cost_block(self) -> dict[str, Any]:
        """Total cost in USD (exact Decimal text) and how it was known, by source."""
        used = [s for s in COST_SOURCES if self.sources[s]]
        return {
            "n": self.costed,
            "missing": self.planned - self.costed,
            "usd": format(self.cost, "f"),  # positional: str() writes 0.0000000 as 0E-7
            "source": None if not used else used[0] if len(used) == 1 else "mixed",
            "sources": dict(self.sources),
        }
