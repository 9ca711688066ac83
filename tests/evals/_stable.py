"""Comparing two runs of one plan: a JSON value without the keys that differ between runs."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


def without(value: Any, volatile: Collection[str]) -> Any:
    """`value` with every object's `volatile` keys left out, at any depth."""
    if isinstance(value, dict):
        return {k: without(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [without(v, volatile) for v in value]
    return value
