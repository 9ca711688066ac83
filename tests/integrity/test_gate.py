"""The lower-bound gate's reference points (docs/integrity.md), as the overfit rule's are."""

from __future__ import annotations

import math
from dataclasses import replace
from decimal import Decimal
from fractions import Fraction

import pytest

from evals._evidence import (
    ALPHA,
    admits_lower,
    eval_score_lower,
    lower_bound,
    lower_bound_at_least,
    selection_alpha,
    selection_z,
)
from evals._stats import rounded, wilson
from tests.records._record import agent_record


@pytest.mark.parametrize(
    ("k", "z"),
    [(1, "2.2415"), (2, "2.6383"), (3, "2.8653"), (10, "3.5063"), (50, "4.2694"), (200, "4.8486")],
)
def test_z_grows_with_the_evals_an_author_ran(k: int, z: str) -> None:
    assert selection_z(k) == Fraction(Decimal(z))


def test_the_alphas_sum_to_alpha() -> None:
    """alpha_k = ALPHA / (k (k + 1)) telescopes: whatever the stopping rule, at most ALPHA."""
    total = sum((selection_alpha(k) for k in range(1, 10_001)), Fraction(0))
    assert total == ALPHA * Fraction(10_000, 10_001) and total < ALPHA
    assert selection_alpha(1) == ALPHA / 2


def test_at_k_1_the_bound_is_below_the_records_interval() -> None:
    for x, n in ((51, 60), (0, 10), (10, 10), (33, 36), (Fraction(7, 3), 5)):
        low, _ = wilson(x, n)
        assert lower_bound(Fraction(x), n, 1) <= rounded(low)


@pytest.mark.parametrize(
    ("x", "n", "k", "bound"),
    [
        (51, 60, 1, "0.7200"),  # 0.85 of 60, one eval
        (51, 60, 3, "0.6770"),  # ... after three
        (51, 60, 50, "0.5777"),
        (51, 60, 200, "0.5379"),
        (135, 150, 1, "0.8314"),
        (135, 150, 200, "0.7227"),
        (88, 150, 200, "0.3932"),  # 0.5867 of 150, the best of 200 evals of a coin
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
    record = agent_record(
        eval_score=0.85,
        suites={
            "a": {
                "public": {"passed": 36, "total": 36, "rate": 1},
                "holdout": {"passed": 51, "total": 60, "rate": 0.85},
            },
            "b": {"public": {"passed": 9, "total": 10, "rate": 0.9}, "holdout": None},
        },
    )
    value, ks = eval_score_lower(record, {"a": 3})
    assert ks == {"a": 3, "b": 1}  # a suite the org never had graded counts once
    assert value == min(lower_bound(Fraction(51), 60, 3), lower_bound(Fraction(9), 10, 1))
    assert admits_lower(record, {"a": 3}, value)
    assert not admits_lower(record, {"a": 3}, value + Decimal("0.0001"))
    assert eval_score_lower(replace(record, eval_score=None), {}) == (None, {"a": 1, "b": 1})
    assert not admits_lower(replace(record, eval_score=None), {}, Decimal(0))


@pytest.mark.parametrize(
    ("n", "bounds"),
    [
        (60, ("0.7200", "0.6316", "0.5571", "0.4981")),
        (150, ("0.7733", "0.7216", "0.6754", "0.6358")),
        (500, ("0.8107", "0.7856", "0.7631", "0.7435")),
        (2000, ("0.8312", "0.8198", "0.8099", "0.8013")),
    ],
)
def test_the_price_of_counting_every_orgs_evals(n: int, bounds: tuple[str, ...]) -> None:
    """An honest agent right on 85% of the holdout, its bound when it is the 1st, 10th,
    100th and 1000th agent evaluated on the suite (docs/integrity.md, "What it costs"):
    the bound widens as a suite is used, and a large holdout is what keeps it close."""
    shown = tuple(str(lower_bound(Fraction(85, 100) * n, n, k)) for k in (1, 10, 100, 1000))
    assert shown == bounds
    assert all(Decimal(b) < Decimal(a) for a, b in zip(shown, shown[1:], strict=False))
