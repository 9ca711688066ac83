"""Comparing two runs of one plan: a JSON value without the keys that differ between runs."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

# What differs between two runs of one plan in any eval's documents: ids, clocks, timings.
RUN_VOLATILE = frozenset(
    {
        "id",
        "eval_id",
        "certificate_id",
        "created_at",
        "finished_at",
        "evaluated_at",
        "eval_started_at",
        "request_id",
        "latency_ms",
        "grade_ms",
        "grading_ms",
        "started_at",  # a cell's attempts: when each began, under a span id of its own
        "span_id",
    }
)


def without(value: Any, volatile: Collection[str]) -> Any:
    """`value` with every object's `volatile` keys left out, at any depth."""
    if isinstance(value, dict):
        return {k: without(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [without(v, volatile) for v in value]
    return value
