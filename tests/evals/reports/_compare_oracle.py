"""The comparison as it was made with every cell of both evals in memory: the oracle that
`evals.reports.compare_evals`, which reads each eval's cells once and keeps per case what
it states, must give byte for byte (test_compare_streamed.py). What the two share (the
matching rules, the pairing rule, the spend and unpaired blocks) is imported.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from evals._scores import score_suites
from evals.reports._aggregate import (
    CaseTally,
    CellTotals,
    check_rows,
    rate,
    rate_block,
    tally_cases,
)
from evals.reports._compare import (
    SPLITS,
    _author_holdout_split,
    _check_rows,
    _comparison,
    _delta,
    _exact_rate,
    _matching,
    _Pair,
    _pairs,
    _unpaired,
)
from evals.reports._compare import _spend as spend
from evals.reports._compare_pairs import signed_rate
from evals.reports._data import CellData, EvalData, SuiteData
from evals.reports._gate import fails_gate
from evals.reports._metric_changes import change_counts
from evals.reports._model import suite_counts
from evals.reports._values import timestamp
from records import EvalStatus, imported_view

__all__ = ["compare_data"]


def _case_changes(pairs: Sequence[_Pair]) -> list[dict[str, Any]]:
    """Every paired case with its paired-run scores in each eval, in the base's order."""
    cases: dict[tuple[str, str], list[_Pair]] = {}
    for pair in sorted(pairs, key=lambda p: p.base.idx):
        cases.setdefault((pair.base.split, pair.base.case_digest), []).append(pair)
    out = []
    for (split, digest), group in cases.items():
        runs = len(group)
        base_score = Fraction(sum(p.base.passed for p in group), runs)
        candidate_score = Fraction(sum(p.candidate.passed for p in group), runs)
        tags = sorted({*group[0].base.tags, *group[0].candidate.tags})
        out.append(
            {
                "split": split,
                "case_id": group[0].base.case_id,
                "candidate_case_id": group[0].candidate.case_id,
                "case_digest": digest,
                "tags": tags,
                "critical": "critical" in tags,
                "runs": runs,
                "base": {"passed": sum(p.base.passed for p in group), "score": rate(base_score)},
                "candidate": {
                    "passed": sum(p.candidate.passed for p in group),
                    "score": rate(candidate_score),
                },
                "delta": signed_rate(candidate_score - base_score),
                "_drop": base_score - candidate_score,
            }
        )
    return out


def _scores(data: EvalData, cases: Sequence[CaseTally]) -> dict[str, Fraction | None]:
    scores = score_suites(suite_counts(data, cases))
    return {suite_id: score.score for suite_id, score in scores.items()}


def _checks_by_key(
    suite: SuiteData | None, cases: Sequence[CaseTally], split: str, lump: bool
) -> dict[tuple[str, str], dict[str, Any]]:
    if suite is None:
        return {}
    mine = [c for c in cases if c.split == split]
    return {(r["scope"], r["name"]): r for r in check_rows(suite, mine, lump_case_checks=lump)}


def _check_deltas(
    base: SuiteData | None,
    candidate: SuiteData | None,
    base_cases: Sequence[CaseTally],
    candidate_cases: Sequence[CaseTally],
    operator: bool,
) -> list[dict[str, Any]]:
    """Per-check pass-rate deltas by split; an author's holdout folds cases' own checks."""
    rows: list[dict[str, Any]] = []
    for split in SPLITS:
        lump = split == "holdout" and not operator
        ours = _checks_by_key(base, base_cases, split, lump)
        theirs = _checks_by_key(candidate, candidate_cases, split, lump)
        rows += _check_rows(split, ours, theirs)
    return rows


def _suite(
    suite_id: str,
    base: EvalData,
    candidate: EvalData,
    base_cases: list[CaseTally],
    candidate_cases: list[CaseTally],
    base_scores: dict[str, Fraction | None],
    candidate_scores: dict[str, Fraction | None],
    operator: bool,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    b = next((s for s in base.suites if s.id == suite_id), None)
    c = next((s for s in candidate.suites if s.id == suite_id), None)
    mine_b = [t for t in base_cases if t.suite_id == suite_id]
    mine_c = [t for t in candidate_cases if t.suite_id == suite_id]
    pairs, lone_base, lone_candidate = _pairs(
        base.cells_of(suite_id) if b else [], candidate.cells_of(suite_id) if c else []
    )
    changes = _case_changes(pairs)
    splits = {}
    for split in SPLITS:
        sb = [t for t in mine_b if t.split == split]
        sc = [t for t in mine_c if t.split == split]
        here = [ch for ch in changes if ch["split"] == split]
        splits[split] = {
            "base": rate_block(sb) if b else None,
            "candidate": rate_block(sc) if c else None,
            "rate_delta": _delta(_exact_rate(sb), _exact_rate(sc)) if b and c else None,
            "paired": {
                "cells": sum(ch["runs"] for ch in here),
                "cases": len(here),
            },
            "improved": sum(1 for ch in here if ch["_drop"] < 0),
            "regressed": sum(1 for ch in here if ch["_drop"] > 0),
            "unchanged": sum(1 for ch in here if ch["_drop"] == 0),
        }
    critical = [
        {"suite": suite_id, **ch} for ch in changes if fails_gate(ch["critical"], ch["_drop"])
    ]
    shown = [
        {k: v for k, v in ch.items() if k != "_drop"}
        for ch in changes
        if ch["_drop"] != 0 and (operator or ch["split"] == "public")
    ]

    checks = _check_deltas(b, c, mine_b, mine_c, operator)

    def side(suite: SuiteData | None, scores: dict[str, Fraction | None]) -> Any:
        if suite is None:
            return None
        return {
            "version": suite.version,
            "suite_digest": suite.suite_digest_for(operator),
            "score": rate(scores.get(suite_id)),
        }

    out = {
        "id": suite_id,
        "base": side(b, base_scores),
        "candidate": side(c, candidate_scores),
        "score_delta": _delta(base_scores.get(suite_id), candidate_scores.get(suite_id))
        if b and c
        else None,
        "splits": splits,
        "cases": shown,
        "checks": checks,
        "metric_changes": change_counts(checks),
        **_spend(
            base.cells_of(suite_id) if b else None, candidate.cells_of(suite_id) if c else None
        ),
        "unpaired": {
            "base": _unpaired(lone_base, operator),
            "candidate": _unpaired(lone_candidate, operator),
        },
    }
    return out, critical


def _spend(base: Sequence[CellData] | None, candidate: Sequence[CellData] | None) -> dict[str, Any]:
    return spend(
        None if base is None else CellTotals.of(base),
        None if candidate is None else CellTotals.of(candidate),
    )


def _eval_view(data: EvalData, operator: bool) -> dict[str, Any]:
    info = data.info
    return {
        "id": info.id,
        "agent": info.agent_id,
        "agent_version": info.agent_version,
        "status": info.status,
        "complete": info.status == EvalStatus.DONE and all(c.done for c in data.cells),
        "created_at": timestamp(info.created_at),
        "finished_at": timestamp(info.finished_at),
        # Run elsewhere and imported (evals._import), or None for an eval run here.
        "imported": None if info.origin is None else imported_view(info.origin, operator=operator),
    }


def _compared(
    ids: Sequence[str], base: EvalData, candidate: EvalData, operator: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every suite's comparison, and the critical regressions over all of them."""
    base_cases, candidate_cases = tally_cases(base.cells), tally_cases(candidate.cells)
    base_scores, candidate_scores = _scores(base, base_cases), _scores(candidate, candidate_cases)
    suites, critical = [], []
    for suite_id in ids:
        view, regressions = _suite(
            suite_id,
            base,
            candidate,
            base_cases,
            candidate_cases,
            base_scores,
            candidate_scores,
            operator,
        )
        suites.append(view)
        critical += regressions
    return suites, critical


def compare_data(base: EvalData, candidate: EvalData, audience: str, allow_mismatch: bool) -> Any:
    """The comparison of two evals in memory; Refused when unmatched."""
    chosen, mismatches, ids = _matching(base, candidate, audience, allow_mismatch)
    operator = chosen == "operator"
    full = _compared(ids, base, candidate, operator)
    if operator:
        suites, critical = full
    else:
        # An author's comparison is built from the public cells alone; of the
        # holdout it reads each side's rate and interval and whether the gate
        # held, once both evals are complete (docs/integrity.md).
        complete = base.complete and candidate.complete
        suites, public_critical = _compared(
            ids, base.public_only(), candidate.public_only(), operator
        )
        critical = full[1] if complete else public_critical
        for view, whole in zip(suites, full[0], strict=True):
            view["splits"]["holdout"] = _author_holdout_split(whole["splits"]["holdout"], complete)
            view["unpaired"]["base"]["counts"]["holdout"] = None
            view["unpaired"]["candidate"]["counts"]["holdout"] = None
            if complete:
                view["base"], view["candidate"] = whole["base"], whole["candidate"]
                view["score_delta"] = whole["score_delta"]
    return _comparison(
        chosen,
        mismatches,
        _eval_view(base, operator),
        _eval_view(candidate, operator),
        suites,
        critical,
    )
