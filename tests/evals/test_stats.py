"""Intervals and tests against published and hand-computed values."""

from __future__ import annotations

import math
import time
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals._fisher import fisher_one_sided
from evals._stats import (
    newcombe,
    newcombe_lower_positive,
    round_half_up,
    rounded,
    stability,
    wilson,
)


@pytest.mark.parametrize(
    ("x", "n", "low", "high"),
    [
        # A record's example: 47/50 -> [0.84, 0.98]; 43/50 -> [0.74, 0.93].
        (47, 50, "0.8378", "0.9794"),
        (43, 50, "0.7381", "0.9305"),
        (0, 10, "0.0000", "0.2775"),
        (10, 10, "0.7225", "1.0000"),
        (Fraction(1, 2), 1, "0.0546", "0.9454"),
        # Newcombe 1998, "Two-sided confidence intervals for the single proportion", Table I.
        (81, 263, "0.2553", "0.3662"),
        (15, 148, "0.0624", "0.1605"),
        (1, 29, "0.0061", "0.1718"),
    ],
)
def test_wilson(x: int | Fraction, n: int, low: str, high: str) -> None:
    lo, hi = wilson(x, n)
    assert (rounded(lo), rounded(hi)) == (Decimal(low), Decimal(high))


def test_wilson_needs_trials_and_a_proportion() -> None:
    with pytest.raises(ValueError):
        wilson(0, 0)
    with pytest.raises(ValueError):
        wilson(11, 10)
    with pytest.raises(ValueError):
        wilson(-1, 10)


@pytest.mark.parametrize(
    ("x1", "n1", "x2", "n2", "low", "high"),
    [
        # Newcombe 1998, "Interval estimation for the difference between independent
        # proportions", Table II, method 10.
        (56, 70, 48, 80, "0.0524", "0.3339"),
        (9, 10, 3, 10, "0.1705", "0.8090"),
        (5, 56, 0, 29, "-0.0381", "0.1926"),
        # The overfit rule's reference point: 18/20 against 12/20 has its lower bound at 0.029.
        (18, 20, 12, 20, "0.0294", "0.5253"),
    ],
)
def test_newcombe(x1: int, n1: int, x2: int, n2: int, low: str, high: str) -> None:
    lo, hi = newcombe(x1, n1, x2, n2)
    assert (rounded(lo), rounded(hi)) == (Decimal(low), Decimal(high))
    assert newcombe_lower_positive(x1, n1, x2, n2) is (lo > 0)


@pytest.mark.parametrize(("n1", "n2"), [(20, 20), (20, 50), (50, 20), (7, 3)])
def test_exact_newcombe_decision_agrees_with_the_digits(n1: int, n2: int) -> None:
    # Away from 0 the 50-digit bound and the exact decision must agree everywhere.
    near = 0
    for x1 in range(n1 + 1):
        for x2 in range(n2 + 1):
            low, _ = newcombe(x1, n1, x2, n2)
            if abs(low) < Decimal("1e-40"):
                near += 1
                continue
            assert newcombe_lower_positive(x1, n1, x2, n2) is (low > 0), (x1, n1, x2, n2)
    assert near == 0


def test_exact_newcombe_decision_with_fractional_counts() -> None:
    for x1 in range(21):
        for x2 in range(21):
            a, b = Fraction(x1, 2), Fraction(x2, 2)
            low, _ = newcombe(a, 10, b, 10)
            assert newcombe_lower_positive(a, 10, b, 10) is (low > 0), (a, b)


def test_newcombe_decision_at_the_boundary() -> None:
    # 20/20 vs 16/20: the lower bound is just below 0 (-0.0005), so no warning there.
    low, _ = newcombe(20, 20, 16, 20)
    assert Decimal("-0.001") < low < 0
    assert not newcombe_lower_positive(20, 20, 16, 20)
    assert newcombe_lower_positive(20, 20, 15, 20)
    assert not newcombe_lower_positive(10, 20, 10, 20)  # d = 0
    assert not newcombe_lower_positive(5, 20, 10, 20)  # d < 0
    with pytest.raises(ValueError):
        newcombe_lower_positive(0, 0, 1, 2)


def test_fisher_by_hand() -> None:
    # 3/3 against 0/3: only the observed table is as extreme, C(3,3)C(3,0)/C(6,3) = 1/20.
    assert fisher_one_sided(3, 3, 0, 3) == Fraction(1, 20)
    # 2/3 against 1/3: tables with k = 2, 3 of the 3 successes in group 1.
    assert fisher_one_sided(2, 3, 1, 3) == Fraction(3 * 3 + 1, 20)
    assert fisher_one_sided(0, 5, 4, 5) == 1
    assert fisher_one_sided(0, 0, 0, 0) == 1


def test_fisher_known_values() -> None:
    assert rounded(fisher_one_sided(18, 20, 12, 20), 3) == Decimal("0.032")  # overfit rule
    assert rounded(fisher_one_sided(47, 50, 43, 50), 3) == Decimal("0.159")  # a record's example
    assert isinstance(fisher_one_sided(90, 100, 75, 100), Fraction)


def _fisher_by_definition(x1: int, n1: int, x2: int, n2: int) -> Fraction:
    total, successes = n1 + n2, x1 + x2
    tail = sum(
        math.comb(successes, k) * math.comb(total - successes, n1 - k)
        for k in range(x1, min(successes, n1) + 1)
    )
    return Fraction(tail, math.comb(total, n1))


@settings(max_examples=300, deadline=None)
@given(n1=st.integers(0, 80), n2=st.integers(0, 80), data=st.data())
def test_fisher_is_its_definition_exactly(n1: int, n2: int, data: st.DataObject) -> None:
    """Summed from either side by the terms' ratio, p is the definition's, to the last digit."""
    x1, x2 = data.draw(st.integers(0, n1)), data.draw(st.integers(0, n2))
    assert fisher_one_sided(x1, n1, x2, n2) == _fisher_by_definition(x1, n1, x2, n2)


def test_fisher_is_its_definition_on_every_table_up_to_16_a_side() -> None:
    """Every 2x2 table with groups of 0 to 16 (23,409 tables), not a sample of them."""
    tables = 0
    for n1 in range(17):
        for n2 in range(17):
            for x1 in range(n1 + 1):
                for x2 in range(n2 + 1):
                    assert fisher_one_sided(x1, n1, x2, n2) == _fisher_by_definition(
                        x1, n1, x2, n2
                    ), (x1, n1, x2, n2)
                    tables += 1
    assert tables == 153**2


def test_fisher_on_a_large_table_is_quick() -> None:
    """Two binomials per term took 0.27 s at 2,000 cases a group and 130 s at 20,000."""
    started = time.process_time()
    p = fisher_one_sided(1800, 2000, 1600, 2000)
    assert time.process_time() - started < 0.25
    assert p == _fisher_by_definition(1800, 2000, 1600, 2000)


def test_fisher_rejects_impossible_tables() -> None:
    for table in [(4, 3, 0, 3), (0, 3, -1, 3), (1, -1, 0, 3)]:
        with pytest.raises(ValueError):
            fisher_one_sided(*table)


@settings(max_examples=60, deadline=None)
@given(
    n1=st.integers(1, 60),
    n2=st.integers(1, 60),
    data=st.data(),
)
def test_fisher_is_a_probability_falling_with_x1(n1: int, n2: int, data: st.DataObject) -> None:
    x2 = data.draw(st.integers(0, n2))
    ps = [fisher_one_sided(x1, n1, x2, n2) for x1 in range(n1 + 1)]
    assert all(0 < p <= 1 for p in ps)
    assert ps[0] == 1
    assert all(a >= b for a, b in zip(ps, ps[1:], strict=False))


@settings(max_examples=40, deadline=None)
@given(n1=st.integers(1, 40), n2=st.integers(1, 40), data=st.data())
def test_fisher_tail_matches_the_hypergeometric(n1: int, n2: int, data: st.DataObject) -> None:
    # With the margins fixed, the tail from x1 is this table's hypergeometric probability
    # plus the tail from the next table (x1 + 1, x2 - 1), which is empty past the support.
    x1 = data.draw(st.integers(0, n1))
    x2 = data.draw(st.integers(0, n2))
    s, total = x1 + x2, n1 + n2
    here = Fraction(math.comb(s, x1) * math.comb(total - s, n1 - x1), math.comb(total, n1))
    after = fisher_one_sided(x1 + 1, n1, x2 - 1, n2) if x1 < n1 and x2 > 0 else Fraction(0)
    assert fisher_one_sided(x1, n1, x2, n2) == here + after


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Fraction(5, 2), 3),
        (Fraction(7, 2), 4),  # half up, not to even
        (Fraction(49999, 20000), 2),
        (Fraction(0), 0),
        (Fraction(1, 2), 1),
        (17, 17),
    ],
)
def test_round_half_up(value: Fraction | int, expected: int) -> None:
    assert round_half_up(value) == expected


def test_stability() -> None:
    assert stability([(1, 1), (0, 1)]) is None  # no case ran twice
    assert stability([]) is None
    # SDs 0.5 and 0; the single-run case is left out of the mean.
    assert stability([(1, 2), (2, 2), (1, 1)]) == Decimal("0.25")
    third = stability([(1, 3)])
    assert third is not None
    assert rounded(third) == Decimal("0.4714")  # sqrt(2/9)
    assert stability([(0, 5), (5, 5)]) == 0


def test_rounded_is_half_even() -> None:
    assert rounded(Fraction(1, 8), 2) == Decimal("0.12")
    assert rounded(Fraction(3, 8), 2) == Decimal("0.38")
    assert rounded(Decimal("0.00005")) == Decimal("0.0000")
    assert str(rounded(Fraction(17, 20))) == "0.8500"
