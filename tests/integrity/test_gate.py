"""The lower-bound gate's reference points (docs/integrity.md), as OVERFIT.md's are tests."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest

from evals._evidence import (
    admits_lower,
    eval_score_lower,
    lower_bound,
    lower_bound_at_least,
    selection_z,
)
from evals._stats import rounded, wilson


@pytest.mark.parametrize(
    ("k", "z"),
    [(1, "1.96"), (2, "2.2415"), (3, "2.394"), (10, "2.8071"), (50, "3.2906"), (200, "3.6623")],
)
def test_z_grows_with_the_evals_an_author_could_have_kept(k: int, z: str) -> None:
    assert selection_z(k) == Fraction(Decimal(z))


def test_at_k_1_the_bound_is_the_records_interval() -> None:
    for x, n in ((51, 60), (0, 10), (10, 10), (33, 36), (Fraction(7, 3), 5)):
        low, _ = wilson(x, n)
        assert lower_bound(Fraction(x), n, 1) == rounded(low) or (
            # the bound rounds down, the record's interval to nearest
            lower_bound(Fraction(x), n, 1) + Decimal("0.0001") == rounded(low)
        )


@pytest.mark.parametrize(
    ("x", "n", "k", "bound"),
    [
        (51, 60, 1, "0.7388"),  # 0.85 of 60, one eval
        (51, 60, 3, "0.7097"),  # ... the best of three
        (51, 60, 50, "0.6469"),
        (51, 60, 200, "0.6205"),
        (135, 150, 1, "0.8415"),
        (135, 150, 200, "0.7751"),
        (88, 150, 200, "0.4382"),  # 0.5867 of 150, the best of 200 evals of a coin
    ],
)
def test_reference_points(x: int, n: int, k: int, bound: str) -> None:
    assert lower_bound(Fraction(x), n, k) == Decimal(bound)
    # Checked against the textbook formula in floating point, written out again here.
    z = float(selection_z(k))
    p = x / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert abs(float(bound) - (centre - half)) < 1e-4


def test_the_decision_is_exact_at_the_bound() -> None:
    shown = lower_bound(Fraction(51), 60, 3)
    assert lower_bound_at_least(Fraction(51), 60, 3, Fraction(shown))
    assert not lower_bound_at_least(Fraction(51), 60, 3, Fraction(shown) + Fraction(1, 10_000))
    assert not lower_bound_at_least(Fraction(0), 0, 1, Fraction(0))


def test_every_split_of_every_suite_must_reach_it() -> None:
    record = {
        "eval_score": 0.85,
        "suites": {
            "a": {
                "public": {"passed": 36, "total": 36, "rate": 1},
                "holdout": {"passed": 51, "total": 60, "rate": 0.85},
            },
            "b": {"public": {"passed": 9, "total": 10, "rate": 0.9}, "holdout": None},
        },
    }
    value, ks = eval_score_lower(record, {"a": 3})
    assert ks == {"a": 3, "b": 1}  # a suite the org never had graded counts once
    assert value == min(lower_bound(Fraction(51), 60, 3), lower_bound(Fraction(9), 10, 1))
    assert admits_lower(record, {"a": 3}, value)
    assert not admits_lower(record, {"a": 3}, value + Decimal("0.0001"))
    assert eval_score_lower({**record, "eval_score": None}, {}) == (None, {"a": 1, "b": 1})
    assert not admits_lower({**record, "eval_score": None}, {}, Decimal(0))
