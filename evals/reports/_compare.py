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
- Each eval's cells are read once, a page at a time (`_compare_read`), and
  what is kept of them grows with the cases of a plan, not with its cells:
  cells pair from each case's runs of repetitions (`_compare_pairs`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from evals._scores import score_suites
from evals.reports._aggregate import CaseTally, CellTotals, rate, rate_block
from evals.reports._compare_pairs import Change, Lone, Pairing, pair_suite, signed_rate
from evals.reports._compare_read import CompareTally
from evals.reports._data import AUTHOR, CellData, EvalData, EvalSource, SuiteData, open_eval
from evals.reports._gate import GATE_DROP, GATE_RULE, fails_gate
from evals.reports._metric_changes import change_counts, metric_deltas
from evals.reports._model import Audience, author_holdout, check_audience, suite_counts
from evals.reports._values import timestamp
from records import Store, imported_view
from schema.errors import Refused

__all__ = ["COMPARE_VERSION", "GATE_DROP", "compare_evals", "compare_sources"]

COMPARE_VERSION = 1
SPLITS = ("public", "holdout")

Key = tuple[str, str, int]  # (suite id, case digest, repetition)
CheckKey = tuple[str, str]  # (scope, name)


def _every(split: str) -> bool:
    """Every split's cells pair: the gate's pairing, in every audience."""
    return True


def _delta(base: Fraction | None, candidate: Fraction | None) -> Decimal | None:
    return None if base is None or candidate is None else signed_rate(candidate - base)


# -- matching ---------------------------------------------------------------------------


def _short(digest: str) -> str:
    return digest.removeprefix("hmac-sha256:")[:12]


def _mismatches(
    base: Sequence[SuiteData], candidate: Sequence[SuiteData], operator: bool
) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    ours = {s.id: s for s in base}
    theirs = {s.id: s for s in candidate}
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
    """Recorded cells paired by key; the rest (unrecorded, or without a partner) unpaired.
    The explorer's changed cells pair so, cells in hand; a comparison pairs by the same
    rule from what it kept of the cells (`_compare_pairs.pair_suite`)."""
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


# -- per suite ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Side:
    """One eval as a view of the comparison reads it: its tally, the cases the view is
    built from (an author's: the public ones, or all for the holdout's rates and the
    gate) and their suites' scores."""

    tally: CompareTally
    cases: list[CaseTally]
    scores: dict[str, Fraction | None]

    @classmethod
    def of(cls, tally: CompareTally, *, public_only: bool) -> _Side:
        cases = [c for c in tally.cases.values() if not public_only or c.split in AUTHOR]
        scores = score_suites(suite_counts(tally.source, cases))
        return cls(tally, cases, {suite_id: score.score for suite_id, score in scores.items()})

    def pairing(self, suite_id: str) -> Pairing | None:
        return None if self.tally.suite(suite_id) is None else self.tally.pairing

    def mine(self, suite_id: str, split: str) -> list[CaseTally]:
        return [c for c in self.cases if c.suite_id == suite_id and c.split == split]


def _exact_rate(cases: Sequence[CaseTally]) -> Fraction | None:
    scored = [c.score for c in cases if c.score is not None]
    return sum(scored, Fraction(0)) / len(scored) if scored else None


def _check_side(row: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if row is None else {"passed": row["passed"], "n": row["n"], "rate": row["rate"]}


def _check_rate(row: dict[str, Any] | None) -> Fraction | None:
    return None if row is None or not row["n"] else Fraction(row["passed"], row["n"])


def _checks_by_key(side: _Side, suite_id: str, split: str) -> dict[CheckKey, dict[str, Any]]:
    """The suite split's check rows over the cells the audience is shown: none of the
    holdout for an author, who is shown no holdout cell."""
    tallies = side.tally.checks.get((suite_id, split))
    if side.tally.suite(suite_id) is None or tallies is None:
        return {}
    return {(r["scope"], r["name"]): r for r in tallies.rows(side.mine(suite_id, split))}


def _check_rows(
    split: str, ours: dict[CheckKey, dict[str, Any]], theirs: dict[CheckKey, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Each check of the split on either side (the base's first): both rates, their
    difference and the metrics' changes."""
    rows = []
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


def _check_deltas(base: _Side, candidate: _Side, suite_id: str) -> list[dict[str, Any]]:
    """Per-check pass-rate deltas by split."""
    rows: list[dict[str, Any]] = []
    for split in SPLITS:
        ours = _checks_by_key(base, suite_id, split)
        theirs = _checks_by_key(candidate, suite_id, split)
        rows += _check_rows(split, ours, theirs)
    return rows


def _score_side(side: _Side, suite_id: str, operator: bool) -> dict[str, Any] | None:
    suite = side.tally.suite(suite_id)
    if suite is None:
        return None
    return {
        "version": suite.version,
        "suite_digest": suite.suite_digest_for(operator),
        "score": rate(side.scores.get(suite_id)),
    }


def _score_delta(base: _Side, candidate: _Side, suite_id: str) -> Decimal | None:
    if base.tally.suite(suite_id) is None or candidate.tally.suite(suite_id) is None:
        return None
    return _delta(base.scores.get(suite_id), candidate.scores.get(suite_id))


def _rates(base: _Side, candidate: _Side, suite_id: str, split: str) -> dict[str, Any]:
    """Each side's rate block of the suite split, and their difference."""
    b, c = base.tally.suite(suite_id), candidate.tally.suite(suite_id)
    sb, sc = base.mine(suite_id, split), candidate.mine(suite_id, split)
    return {
        "base": rate_block(sb) if b else None,
        "candidate": rate_block(sc) if c else None,
        "rate_delta": _delta(_exact_rate(sb), _exact_rate(sc)) if b and c else None,
    }


def _paired(changes: Sequence[Change]) -> dict[str, Any]:
    """How many of a split's cells and cases paired, and how its cases moved."""
    return {
        "paired": {"cells": sum(ch.runs for ch in changes), "cases": len(changes)},
        "improved": sum(1 for ch in changes if ch.drop < 0),
        "regressed": sum(1 for ch in changes if ch.drop > 0),
        "unchanged": sum(1 for ch in changes if ch.drop == 0),
    }


def _shown(changes: Sequence[Change], operator: bool) -> list[dict[str, Any]]:
    """The cases that moved, as the audience may see them."""
    return [ch.view() for ch in changes if ch.drop != 0 and (operator or ch.split == "public")]


def _suite(
    suite_id: str, base: _Side, candidate: _Side, operator: bool
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    b, c = base.tally.suite(suite_id), candidate.tally.suite(suite_id)
    changes, lone_base, lone_candidate = pair_suite(
        suite_id, base.pairing(suite_id), candidate.pairing(suite_id), base.tally.shows
    )
    splits = {}
    for split in SPLITS:
        here = [ch for ch in changes if ch.split == split]
        splits[split] = {
            **_rates(base, candidate, suite_id, split),
            **_paired(here),
        }
    shown = _shown(changes, operator)
    checks = _check_deltas(base, candidate, suite_id)
    out = {
        "id": suite_id,
        "base": _score_side(base, suite_id, operator),
        "candidate": _score_side(candidate, suite_id, operator),
        "score_delta": _score_delta(base, candidate, suite_id),
        "splits": splits,
        "cases": shown,
        "checks": checks,
        "metric_changes": change_counts(checks),
        **_spend(
            base.tally.spend.get(suite_id, CellTotals()) if b else None,
            candidate.tally.spend.get(suite_id, CellTotals()) if c else None,
        ),
        "unpaired": {
            "base": _unpaired(lone_base, operator),
            "candidate": _unpaired(lone_candidate, operator),
        },
    }
    return out, _critical(suite_id, changes)


def _critical(suite_id: str, changes: Sequence[Change]) -> list[dict[str, Any]]:
    """The suite's cases that fail the gate (`_gate`)."""
    return [{"suite": suite_id, **ch.view()} for ch in changes if fails_gate(ch.critical, ch.drop)]


def _unpaired(cells: Sequence[Lone] | Sequence[CellData], operator: bool) -> dict[str, Any]:
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


def _spend(totals_b: CellTotals | None, totals_c: CellTotals | None) -> dict[str, Any]:
    """Each side's cost and latency over its recorded cells, and their differences.

    A cost difference needs both sides known the same one way: a priced cost
    (the manifest's price) against a reported one (the agent's word) measures
    two things, so its delta is null and says why. Cells of no known cost
    (source none: an error before any price applied) add nothing on either
    side. Latency deltas are of the nearest-rank p50 and p95.
    """
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


def _eval_view(tally: CompareTally, operator: bool) -> dict[str, Any]:
    info = tally.source.info
    return {
        "id": info.id,
        "agent": info.agent_id,
        "agent_version": info.agent_version,
        "status": info.status,
        "complete": tally.complete,
        "created_at": timestamp(info.created_at),
        "finished_at": timestamp(info.finished_at),
        # Run elsewhere and imported (evals._import), or None for an eval run here.
        "imported": None if info.origin is None else imported_view(info.origin, operator=operator),
    }


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
    """The comparison of two evals (`schema/compare.schema.json`); Refused when unmatched.
    Each eval's cells are read once, a page at a time (`_compare_read`)."""
    return compare_sources(
        open_eval(store, base_id, inputs=False),
        open_eval(store, candidate_id, inputs=False),
        audience=audience,
        allow_mismatch=allow_mismatch,
    )


def compare_sources(
    base: EvalSource,
    candidate: EvalSource,
    *,
    audience: str = "author",
    allow_mismatch: bool = False,
) -> dict[str, Any]:
    """The comparison of two evals as read (`compare_evals`)."""
    chosen, mismatches, ids = _matching(base, candidate, audience, allow_mismatch)
    operator = chosen == "operator"
    ours, theirs = CompareTally(base, operator=operator), CompareTally(candidate, operator=operator)
    whole = _Side.of(ours, public_only=False), _Side.of(theirs, public_only=False)
    suites: list[dict[str, Any]] = []
    critical: list[dict[str, Any]] = []
    if operator:
        for suite_id in ids:
            view, regressions = _suite(suite_id, *whole, operator)
            suites.append(view)
            critical += regressions
    else:
        # An author's comparison is built from the public cells alone; of the
        # holdout it reads each side's rate and interval and whether the gate
        # held, once both evals are complete (docs/integrity.md).
        complete = ours.complete and theirs.complete
        public = _Side.of(ours, public_only=True), _Side.of(theirs, public_only=True)
        for suite_id in ids:
            view, regressions = _suite(suite_id, *public, operator)
            view["splits"]["holdout"] = _author_holdout_split(
                _rates(*whole, suite_id, "holdout"), complete
            )
            view["unpaired"]["base"]["counts"]["holdout"] = None
            view["unpaired"]["candidate"]["counts"]["holdout"] = None
            if complete:
                view["base"] = _score_side(whole[0], suite_id, operator)
                view["candidate"] = _score_side(whole[1], suite_id, operator)
                view["score_delta"] = _score_delta(*whole, suite_id)
                # The gate holds the holdout's cases too: every cell pairs.
                changes, _, _ = pair_suite(
                    suite_id, whole[0].pairing(suite_id), whole[1].pairing(suite_id), _every
                )
                regressions = _critical(suite_id, changes)
            suites.append(view)
            critical += regressions
    return _comparison(
        chosen,
        mismatches,
        _eval_view(ours, operator),
        _eval_view(theirs, operator),
        suites,
        critical,
    )


def _matching(
    base: EvalSource | EvalData, candidate: EvalSource | EvalData, audience: str, allow: bool
) -> tuple[Audience, list[dict[str, Any]], list[str]]:
    """The audience, what differs between the two evals' plans and the ids of the suites
    compared, the base's first; Refused when they differ and no mismatch is `allow`ed."""
    chosen: Audience = check_audience(audience)
    mismatches = _mismatches(base.suites, candidate.suites, chosen == "operator")
    if mismatches and not allow:
        raise Refused(
            f"{base.info.id} and {candidate.info.id} do not measure the same thing: "
            + "; ".join(m["message"] for m in mismatches),
            hint="--allow-mismatch compares them anyway, labelled unmatched",
            details={"mismatches": mismatches},
        )
    ids = [s.id for s in base.suites]
    ids += [s.id for s in candidate.suites if s.id not in ids]
    return chosen, mismatches, ids


def _comparison(
    chosen: Audience,
    mismatches: list[dict[str, Any]],
    base: dict[str, Any],
    candidate: dict[str, Any],
    suites: list[dict[str, Any]],
    critical: list[dict[str, Any]],
) -> dict[str, Any]:
    """The comparison's document from its parts: the gate held by `critical`."""
    operator = chosen == "operator"
    return {
        "compare_version": COMPARE_VERSION,
        "audience": chosen,
        "matched": not mismatches,
        "mismatches": mismatches,
        "base": base,
        "candidate": candidate,
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
