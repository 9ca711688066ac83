"""Comparing two evals (docs/evals.md, "Reports"): paired cells, case deltas and the critical gate.

- Cells pair on (suite id, case digest, repetition); only recorded cells
  pair. Every other cell is listed as unpaired, never dropped (an author
  gets counts for the holdout's).
- A *matched* comparison needs, per suite, the same suite digest (which
  covers the checks digest and so the grading-rules version), the same
  holdout epoch (from each eval's plan), the same repetitions, and the
  same set of suites.
  Otherwise `compare_evals` refuses (`Refused`, exit 2) and says what
  differs, or with `allow_mismatch` labels the result unmatched. An author
  learns that epochs differ, never their values.
- A case's score is passes / runs over its paired cells; a case improved
  or regressed when that score went up or down. The gate fails when any
  case tagged `critical` dropped by at least `GATE_DROP`, whatever the totals;
  holdout cases count for the gate in every audience, but only an operator
  sees which they are (the rule: `_gate`).
- A check's metrics change by their declared direction (`_metric_changes`):
  they inform, the gate is the critical cases' alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from evals._scores import score_suites
from evals._stats import rounded
from evals.reports._aggregate import (
    CaseTally,
    CellTotals,
    check_rows,
    rate,
    rate_block,
    tally_cases,
)
from evals.reports._data import CellData, EvalData, SuiteData, load_eval
from evals.reports._gate import GATE_DROP, GATE_RULE, fails_gate
from evals.reports._metric_changes import change_counts, metric_deltas
from evals.reports._model import Audience, author_holdout, check_audience, suite_counts
from evals.reports._values import timestamp
from records import EvalStatus, Store, imported_view
from schema.errors import Refused

__all__ = ["COMPARE_VERSION", "GATE_DROP", "compare_evals"]

COMPARE_VERSION = 1
SPLITS = ("public", "holdout")

Key = tuple[str, str, int]  # (suite id, case digest, repetition)


def _signed_rate(value: Fraction) -> Decimal:
    """A difference of rates to 4 places; a difference that rounds to zero is 0, not -0."""
    shown = rounded(value)
    return shown if shown else abs(shown)


def _delta(base: Fraction | None, candidate: Fraction | None) -> Decimal | None:
    return None if base is None or candidate is None else _signed_rate(candidate - base)


# -- matching ---------------------------------------------------------------------------


def _short(digest: str) -> str:
    return digest.removeprefix("hmac-sha256:")[:12]


def _mismatches(base: EvalData, candidate: EvalData, operator: bool) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    ours = {s.id: s for s in base.suites}
    theirs = {s.id: s for s in candidate.suites}
    for suite_id in [*ours, *(t for t in theirs if t not in ours)]:
        b, c = ours.get(suite_id), theirs.get(suite_id)
        if b is None or c is None:
            found.append(
                {
                    "suite": suite_id,
                    "what": "suite",
                    "base": b is not None,
                    "candidate": c is not None,
                    "message": f"suite {suite_id} is only in the "
                    + ("base" if c is None else "candidate")
                    + " eval",
                }
            )
            continue
        if b.suite_digest != c.suite_digest:
            shown_b, shown_c = b.suite_digest_for(operator), c.suite_digest_for(operator)
            found.append(
                {
                    "suite": suite_id,
                    "what": "suite_digest",
                    "base": shown_b,
                    "candidate": shown_c,
                    "message": f"suite {suite_id}: v{b.version} digest {_short(shown_b)} "
                    f"against v{c.version} digest {_short(shown_c)}",
                }
            )
        if b.checks_digest and c.checks_digest and b.checks_digest != c.checks_digest:
            found.append(
                {
                    "suite": suite_id,
                    "what": "checks_digest",
                    "base": (b.digests_for(operator) or {}).get("checks_digest"),
                    "candidate": (c.digests_for(operator) or {}).get("checks_digest"),
                    "message": f"suite {suite_id}: its checks or the grading-rules version differ",
                }
            )
        if b.repetitions != c.repetitions:
            # A case's score is passes over runs: at 1 run it is 0 or 1, at 3 it moves
            # in thirds, so the two are not the same measurement even where cells pair.
            found.append(
                {
                    "suite": suite_id,
                    "what": "repetitions",
                    "base": b.repetitions,
                    "candidate": c.repetitions,
                    "message": f"suite {suite_id}: {b.repetitions} repetitions against "
                    f"{c.repetitions}",
                }
            )
        if b.holdout_epoch != c.holdout_epoch:
            found.append(
                {
                    "suite": suite_id,
                    "what": "holdout_epoch",
                    "base": b.holdout_epoch if operator else None,
                    "candidate": c.holdout_epoch if operator else None,
                    "message": f"suite {suite_id}: the holdouts are of different epochs"
                    + (f" ({b.holdout_epoch} and {c.holdout_epoch})" if operator else ""),
                }
            )
    return found


# -- pairing ----------------------------------------------------------------------------


@dataclass
class _Pair:
    base: CellData
    candidate: CellData


def _pairs(
    base: Sequence[CellData], candidate: Sequence[CellData]
) -> tuple[list[_Pair], list[CellData], list[CellData]]:
    """Recorded cells paired by key; the rest (unrecorded, or without a partner) unpaired."""
    theirs: dict[Key, CellData] = {}
    left_over_candidate: list[CellData] = []
    for cell in candidate:
        key = (cell.suite_id, cell.case_digest, cell.repetition)
        if cell.done and key not in theirs:
            theirs[key] = cell
        else:
            left_over_candidate.append(cell)
    pairs: list[_Pair] = []
    left_over_base: list[CellData] = []
    for cell in base:
        partner = theirs.pop((cell.suite_id, cell.case_digest, cell.repetition), None)
        if cell.done and partner is not None:
            pairs.append(_Pair(cell, partner))
        else:
            left_over_base.append(cell)
            if partner is not None:
                left_over_candidate.append(partner)
    left_over_candidate += theirs.values()
    left_over_candidate.sort(key=lambda c: c.idx)
    return pairs, left_over_base, left_over_candidate


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
                "delta": _signed_rate(candidate_score - base_score),
                "_drop": base_score - candidate_score,
            }
        )
    return out


def _unpaired(cells: Sequence[CellData], operator: bool) -> dict[str, Any]:
    counts = {split: sum(1 for c in cells if c.split == split) for split in SPLITS}
    listed = [
        {
            "split": c.split,
            "case_id": c.case_id,
            "case_digest": c.case_digest,
            "repetition": c.repetition,
            "status": c.status,
            "outcome": c.outcome_code,
            "passed": c.passed if c.done else None,
        }
        for c in cells
        if operator or c.split == "public"
    ]
    return {"counts": counts, "cells": listed}


# -- per suite ----------------------------------------------------------------------------


def _exact_rate(cases: Sequence[CaseTally]) -> Fraction | None:
    scored = [c.score for c in cases if c.score is not None]
    return sum(scored, Fraction(0)) / len(scored) if scored else None


def _scores(data: EvalData, cases: Sequence[CaseTally]) -> dict[str, Fraction | None]:
    scores = score_suites(suite_counts(data, cases))
    return {suite_id: score.score for suite_id, score in scores.items()}


def _check_side(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {"passed": row["passed"], "n": row["n"], "rate": row["rate"]}


def _check_rate(row: dict[str, Any] | None) -> Fraction | None:
    return None if row is None or not row["n"] else Fraction(row["passed"], row["n"])


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
        for key in [*ours, *(k for k in theirs if k not in ours)]:
            b, c = ours.get(key), theirs.get(key)
            rows.append(
                {
                    "split": split,
                    "name": key[1],
                    "scope": key[0],
                    "base": _check_side(b),
                    "candidate": _check_side(c),
                    "delta": _delta(_check_rate(b), _check_rate(c)),
                    "metrics": metric_deltas(b, c),
                }
            )
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
    """Each side's cost and latency over its recorded cells, and their differences.

    A cost difference needs both sides known the same one way: a priced cost
    (the manifest's price) against a reported one (the agent's word) measures
    two things, so its delta is null and says why. Cells of no known cost
    (source none: an error before any price applied) add nothing on either
    side. Latency deltas are of the nearest-rank p50 and p95.
    """
    totals_b = None if base is None else CellTotals.of(base)
    totals_c = None if candidate is None else CellTotals.of(candidate)
    cost_b = None if totals_b is None else totals_b.cost_block()
    cost_c = None if totals_c is None else totals_c.cost_block()
    lat_b = None if totals_b is None else totals_b.latency_block()
    lat_c = None if totals_c is None else totals_c.latency_block()
    withheld = None
    usd_delta = None
    if cost_b is not None and cost_c is not None:
        known_b, known_c = _known(cost_b), _known(cost_c)
        if not cost_b["n"] or not cost_c["n"]:
            withheld = "no recorded cell on one side"
        elif len(known_b) > 1 or known_b != known_c:
            withheld = (
                f"{' and '.join(known_b) or 'no'} cost against "
                f"{' and '.join(known_c) or 'no'}: not the same measure"
            )
        elif cost_b["n"] != cost_c["n"]:
            withheld = f"{cost_b['n']} recorded cells against {cost_c['n']}"
        else:
            usd_delta = format(Decimal(cost_c["usd"]) - Decimal(cost_b["usd"]), "f")

    def ms_delta(q: str) -> Decimal | None:
        if lat_b is None or lat_c is None or lat_b[q] is None or lat_c[q] is None:
            return None
        return Decimal(lat_c[q]) - Decimal(lat_b[q])

    return {
        "cost": {
            "base": cost_b,
            "candidate": cost_c,
            "usd_delta": usd_delta,
            "delta_withheld": withheld,
        },
        "latency_ms": {
            "base": lat_b,
            "candidate": lat_c,
            "p50_delta": ms_delta("p50"),
            "p95_delta": ms_delta("p95"),
        },
    }


def _known(cost: dict[str, Any]) -> list[str]:
    """The ways a side's costs were known (priced, reported), "none" aside."""
    return [source for source in ("priced", "reported") if cost["sources"][source]]


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


def _author_holdout_split(split: dict[str, Any], complete: bool) -> dict[str, Any]:
    """The holdout row of an author's comparison: each side's rate and interval, and
    their difference, once both evals are complete; no case-level counts ever."""

    def side(block: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if block is None else author_holdout(block, complete)

    return {
        "base": side(split["base"]),
        "candidate": side(split["candidate"]),
        "rate_delta": split["rate_delta"] if complete else None,
        "paired": None,
        "improved": None,
        "regressed": None,
        "unchanged": None,
    }


def compare_evals(
    store: Store,
    base_id: str,
    candidate_id: str,
    *,
    audience: str = "author",
    allow_mismatch: bool = False,
) -> dict[str, Any]:
    """The comparison of two evals (`schema/compare.schema.json`); Refused when unmatched."""
    chosen: Audience = check_audience(audience)
    operator = chosen == "operator"
    base, candidate = load_eval(store, base_id), load_eval(store, candidate_id)
    mismatches = _mismatches(base, candidate, operator)
    if mismatches and not allow_mismatch:
        raise Refused(
            f"{base_id} and {candidate_id} do not measure the same thing: "
            + "; ".join(m["message"] for m in mismatches),
            hint="--allow-mismatch compares them anyway, labelled unmatched",
            details={"mismatches": mismatches},
        )
    ids = [s.id for s in base.suites]
    ids += [s.id for s in candidate.suites if s.id not in ids]
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
    return {
        "compare_version": COMPARE_VERSION,
        "audience": chosen,
        "matched": not mismatches,
        "mismatches": mismatches,
        "base": _eval_view(base, operator),
        "candidate": _eval_view(candidate, operator),
        "suites": suites,
        "gate": {
            "passed": not critical,
            "rule": GATE_RULE,
            "critical_regressions": {
                split: sum(1 for r in critical if r["split"] == split)
                if operator or split == "public"
                else None
                for split in SPLITS
            },
            "cases": [
                {
                    "suite": r["suite"],
                    "split": r["split"],
                    "case_id": r["case_id"],
                    "case_digest": r["case_digest"],
                    "base_score": r["base"]["score"],
                    "candidate_score": r["candidate"]["score"],
                    "delta": r["delta"],
                }
                for r in critical
                if operator or r["split"] == "public"
            ],
        },
    }
