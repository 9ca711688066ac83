"""Aggregates over recorded cells, each with its sample (`n`) and what is missing from it.

The case is the unit of rates (EVALS.md, "Scores"): a case scores passes /
recorded runs, and a split's rate and Wilson interval come from
`evals._scores.split_score`, the very function that scored the record. A case
none of whose cells is recorded yet (an eval still running, or cancelled) is
missing from the sample, not a failure. Per-check rates count cells, and
only the graded ones (outcome `ok`): "graded n of N", N = n + missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from agents import OutcomeCode
from evals._scores import split_score
from evals._stats import nearest_rank, rounded
from evals.reports._data import CellData, SuiteData
from evals.reports._values import text_of

__all__ = [
    "CASE_SPECIFIC",
    "OUTCOME_CODES",
    "CaseTally",
    "check_rows",
    "cost_block",
    "grading_block",
    "latency_block",
    "outcome_block",
    "rate",
    "rate_block",
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
    for cell in cells:
        if not cell.graded or cell.checks is None:
            continue
        # One entry per (scope, name) and cell: the folded row passes a cell
        # only when every own check of its case passed there.
        entries: dict[tuple[str, str], list[bool]] = {}
        for position, result in enumerate(cell.checks):
            scope = "suite" if position < leading else "case"
            name = text_of(result.get("name", ""))
            if scope == "case" and lump_case_checks:
                name = CASE_SPECIFIC
            key = (scope, name)
            verdict = entries.setdefault(key, [True, False])
            verdict[0] = verdict[0] and result.get("passed") is True
            verdict[1] = verdict[1] or result.get("critical") is True
        for key, (passed, critical) in entries.items():
            tally = tallies.get(key)
            if tally is None:
                tally = tallies[key] = _CheckTally(key[1], key[0])
            tally.graded += 1
            tally.passed += 1 if passed else 0
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
                "rate": rate(Fraction(tally.passed, tally.graded)) if tally.graded else None,
            }
        )
    return rows


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
