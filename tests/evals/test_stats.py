"""Wilson intervals against published values."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from evals._stats import rounded, wilson


@pytest.mark.parametrize(
    ("x", "n", "low", "high"),
    [
        # EVALS.md's record example: 47/50 -> [0.84, 0.98]; 43/50 -> [0.74, 0.93].
        (47, 50, "0.8378", "0.9794"),
        (43, 50, "0.7381", "0.9305"),
        (0, 10, "0.0000", "0.2775"),
        (10, 10, "0.7225", "1.0000"),
        (Fraction(1, 2), 1, "0.0546", "0.9454"),
    ],
)
def test_wilson(x: int | Fraction, n: int, low: str, high: str) -> None:
    lo, hi = wilson(x, n)
    assert (rounded(lo), rounded(hi)) == (Decimal(low), Decimal(high))


def test_wilson_needs_trials() -> None:
    with pytest.raises(ValueError):
        wilson(0, 0)
