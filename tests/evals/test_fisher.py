"""The Fisher p as a certified interval (evals._fisher): it holds the exact p, and every
decision and digit read from it is the exact p's, on every table up to a size and on
tables built to sit on a boundary."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction

import pytest

from evals._fisher import TailP, compare, fisher_one_sided, fisher_tail, larger
from evals._overfit import ALPHA
from evals._stats import floor_log10, significant

THRESHOLDS = [ALPHA / k for k in range(1, 5)]  # Holm's steps for families of up to 4


def _digits(value: Decimal) -> tuple[object, ...]:
    # Decimal("0.1000") == Decimal("0.10000"), but a report prints them differently.
    return tuple(value.as_tuple())


def _agrees(table: tuple[int, int, int, int], *, width: float, holm: bool = True) -> bool:
    """Checks the interval and everything read from it against the exact p; whether the
    exact p was needed for the raw p's display."""
    exact = fisher_one_sided(*table)
    p = fisher_tail(*table)
    assert p.lo <= exact <= p.hi, table
    assert p.hi - p.lo <= Fraction(width) * exact, table
    for bound in THRESHOLDS:
        assert p.below(bound) == (exact < bound), (table, bound)
    assert _digits(p.significant()) == _digits(significant(exact)), table
    needed = p.computed
    for factor in (2, 3) if holm else ():
        holm = p.scaled(factor)
        value = min(Fraction(1), factor * exact)
        assert holm.lo <= value <= holm.hi and holm.below(ALPHA) == (value < ALPHA), table
        assert _digits(holm.significant()) == _digits(significant(value)), table
    return needed


def test_every_table_up_to_16_a_side() -> None:
    """All 23,409 tables with groups of 0 to 16, the exhaustive set the exact p is checked
    against its definition on (tests/evals/test_stats.py). Holm's scaled p are checked on
    the other sets (and through overfit verdicts, tests/evals/test_overfit.py)."""
    tables = needed = 0
    for n1 in range(17):
        for n2 in range(17):
            for x1 in range(n1 + 1):
                for x2 in range(n2 + 1):
                    needed += _agrees((x1, n1, x2, n2), width=1e-12, holm=False)
                    tables += 1
    assert tables == 153**2
    # Only p on a display boundary (0.1, 0.01, ...: their ends differ in exponent) need it.
    assert needed <= 20


def _grid(n1: int, n2: int, stride: int) -> list[tuple[int, int, int, int]]:
    return [
        (x1, n1, x2, n2)
        for x1 in sorted({*range(0, n1 + 1, stride), n1})
        for x2 in sorted({*range(0, n2 + 1, stride), n2})
    ]


def test_tables_up_to_300_a_side_on_a_grid() -> None:
    """Groups of 25 to 300 (every pair of 25, 100, 300), counts on a grid of 1 in 9."""
    tables = [t for n1 in (25, 100, 300) for n2 in (25, 100, 300) for t in _grid(n1, n2, 9)]
    assert len(tables) == 52**2
    assert sum(_agrees(table, width=1e-11) for table in tables) <= 5


@pytest.mark.slow
def test_every_table_of_groups_of_30_100_and_300() -> None:
    """Every table of every pair of groups of 30, 100 and 300 (187,489 tables)."""
    tables = [t for n1 in (30, 100, 300) for n2 in (30, 100, 300) for t in _grid(n1, n2, 1)]
    assert len(tables) == sum(n + 1 for n in (30, 100, 300)) ** 2
    assert sum(_agrees(table, width=1e-11) for table in tables) <= 50


@pytest.mark.parametrize(
    ("table", "p"),
    [
        ((1, 1, 0, 39), Fraction(1, 40)),  # 1/C(40, 1): ALPHA itself
        ((1, 1, 0, 79), Fraction(1, 80)),  # ALPHA / 2
        ((3, 3, 0, 7), Fraction(1, 120)),  # 1/C(10, 3): ALPHA / 3
        ((1, 1, 0, 159), Fraction(1, 160)),  # ALPHA / 4
    ],
)
def test_a_p_on_a_threshold_takes_the_exact_path(
    table: tuple[int, int, int, int], p: Fraction
) -> None:
    tail = fisher_tail(*table)
    assert fisher_one_sided(*table) == p
    assert tail.lo < p < tail.hi  # within 1e-12 of the threshold: the interval cannot say
    assert not tail.below(p) and tail.computed
    factor = int(ALPHA / p)
    assert not tail.scaled(factor).below(ALPHA)  # Holm's p_holm lands on ALPHA exactly
    assert tail.scaled(factor).exact() == ALPHA


@pytest.mark.parametrize(
    ("table", "shown"),
    [
        ((1, 1, 0, 63), "0.01562"),  # 1/64 = 0.015625: a tie, half-even
        ((1, 1, 0, 127), "0.007812"),  # 1/128 = 0.0078125
        ((1, 1, 0, 9), "0.1000"),  # 1/10: the ends' exponents differ (0.09999…, 0.1000…)
        ((1, 1, 0, 99), "0.01000"),
    ],
)
def test_a_p_on_a_display_boundary_takes_the_exact_path(
    table: tuple[int, int, int, int], shown: str
) -> None:
    tail = fisher_tail(*table)
    assert str(tail.significant()) == shown and tail.computed


def test_near_a_threshold_within_1e_12_the_exact_p_decides() -> None:
    """Intervals of real tables narrowed to 2e-12 around thresholds 1e-12 from their p
    (or on it): the interval cannot say, the exact p does."""
    tight = Fraction(1, 10**12)
    for table in [(1, 1, 0, 39), (18, 20, 11, 20), (45, 50, 36, 50)]:
        exact = fisher_one_sided(*table)
        for bound in [exact, exact * (1 + tight), exact * (1 - tight)]:
            near = TailP(exact * (1 - 2 * tight), exact * (1 + 2 * tight), table)
            assert near.below(bound) == (exact < bound) and near.computed


def test_compare_and_larger_are_the_exact_order() -> None:
    a, b = fisher_tail(18, 20, 11, 20), fisher_tail(48, 50, 40, 50)
    assert compare(a, b) == 1 and compare(b, a) == -1 and larger(a, b) is a
    assert not a.computed and not b.computed  # far apart: the intervals decide
    same, twin = fisher_tail(18, 20, 11, 20), fisher_tail(18, 20, 11, 20)
    assert compare(same, twin) == 0 and not same.computed  # the same table, the same p
    # Different tables, equal p (the mirrored one): the exact values are compared.
    mirror = fisher_tail(1, 1, 0, 39), fisher_tail(39, 39, 0, 1)
    assert fisher_one_sided(39, 39, 0, 1) == Fraction(1, 40)
    assert compare(*mirror) == 0 and mirror[0].computed
    assert larger(*mirror) is mirror[0]


def test_extremes() -> None:
    # p ~ 1e-5000: 1/C(16610, 8305), far below any float.
    h = 8305
    tiny = fisher_tail(h, h, 0, h)
    exact = fisher_one_sided(h, h, 0, h)
    assert exact == Fraction(1, math.comb(2 * h, h))
    assert tiny.lo <= exact <= tiny.hi and tiny.hi - tiny.lo <= exact * Fraction(1, 10**10)
    assert str(tiny.significant()) == str(significant(exact)) and not tiny.computed
    assert str(tiny.significant()).endswith("E-4998") and tiny.below(Fraction(1, 10**4997))
    # p just below 1: shown 1.0000 (1's own is 1.000), with no exact p computed.
    near_one = fisher_tail(2, h, h - 1, h)
    exact = fisher_one_sided(2, h, h - 1, h)
    assert near_one.lo <= exact <= near_one.hi < 1
    assert str(near_one.significant()) == str(significant(exact)) == "1.0000"
    assert str(near_one.scaled(2).significant()) == "1.000" and not near_one.computed
    # p = 1: every table with the margins counts; empty groups; no successes; no failures.
    ones = [(0, 5, 3, 5), (5, 5, 5, 5), (0, 0, 0, 0), (0, 3, 0, 3), (0, 0, 3, 5), (3, 5, 0, 0)]
    for table in ones:
        one = fisher_tail(*table)
        assert one.lo == one.hi == 1 == fisher_one_sided(*table), table
        assert str(one.significant()) == "1.000"
    for table in [(4, 3, 0, 3), (0, 3, -1, 3), (1, -1, 0, 3)]:
        with pytest.raises(ValueError):
            fisher_tail(*table)


def test_a_million_cells_needs_no_exact_p() -> None:
    """Tables of 10^6 cells (the exact p takes minutes there): the interval is within
    1e-9 of its value and decides both the display and the thresholds alone."""
    h = 500_000
    for table in [(h // 2, h, h // 2, h), (h // 2 + 1200, h, h // 2 - 1200, h), (h, h, 0, h)]:
        p = fisher_tail(*table)
        assert 0 < p.lo < p.hi <= 1 and p.hi - p.lo <= p.lo * Fraction(1, 10**9)
        p.significant(), p.below(ALPHA), p.scaled(3).significant()
        assert not p.computed


@pytest.mark.parametrize(
    "value",
    [Fraction(1), Fraction(10), Fraction(1, 10), Fraction(99999, 10**6), Fraction(3, 10**9),
     Fraction(10**50 + 1, 10**50), Fraction(10**50 - 1, 10**50), Fraction(1, 3), Fraction(2**-60)],
)  # fmt: skip
def test_floor_log10_is_the_decimal_length_rule(value: Fraction) -> None:
    # The rule it replaces, by decimal lengths (refused by str() past 4,300 digits).
    by_length = len(str(value.numerator)) - len(str(value.denominator))
    by_length -= Fraction(10) ** by_length > value
    assert floor_log10(value) == by_length
