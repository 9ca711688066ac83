"""A check metric's change between two evals, judged by its direction (docs/evals.md, "Reports").

Each side's value is the metric's mean over cases as its report shows it
(`_aggregate.metric_block`); the change is the candidate's mean minus the
base's. A metric that is to be maximised improved when it rose, one to be
minimised when it fell; a metric with no direction (how many nodes a path
matched) changed, and is said to have "no direction": neither way is better.
Unit and direction are the ones the metric's predicate declares
(`evals.checks.METRICS`), carried by the check rows both sides were built with.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from typing import Any, Literal, get_args

__all__ = ["CHANGES", "Change", "change_counts", "metric_change", "metric_deltas"]

Change = Literal["improved", "regressed", "unchanged", "no direction"]
CHANGES: tuple[Change, ...] = get_args(Change)


def metric_change(direction: str | None, delta: Decimal | None) -> Change | None:
    """How a metric moved by `delta` (candidate - base) counts; None without both sides."""
    if delta is None:
        return None
    if delta == 0:
        return "unchanged"
    if direction == "maximize":
        return "improved" if delta > 0 else "regressed"
    if direction == "minimize":
        return "improved" if delta < 0 else "regressed"
    return "no direction"


def _mean(block: dict[str, Any] | None) -> Decimal | None:
    return None if block is None else Decimal(block["mean"])


def metric_deltas(
    base: dict[str, Any] | None, candidate: dict[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """Each metric of a check row on either side, by name (the base's first): its unit and
    direction, each side's mean, the difference and how it counts."""
    ours = (base or {}).get("metrics", {})
    theirs = (candidate or {}).get("metrics", {})
    out: dict[str, dict[str, Any]] = {}
    for name in [*ours, *(n for n in theirs if n not in ours)]:
        b, c = ours.get(name), theirs.get(name)
        known = b if b is not None else c
        assert known is not None  # the name is on one side at least
        low, high = _mean(b), _mean(c)
        delta = None if low is None or high is None else high - low
        # A difference that rounds to zero is 0, not -0.
        delta = None if delta is None else delta if delta else abs(delta)
        out[name] = {
            "unit": known.get("unit"),
            "direction": known.get("direction"),
            "base": low,
            "candidate": high,
            "delta": delta,
            "change": metric_change(known.get("direction"), delta),
        }
    return out


def change_counts(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    """How many metric changes of `rows` (compare check rows) count as each kind."""
    counts: dict[str, int] = dict.fromkeys(CHANGES, 0)
    for row in rows:
        for metric in row["metrics"].values():
            if metric["change"] is not None:
                counts[metric["change"]] += 1
    return counts
