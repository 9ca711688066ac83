"""Rates, intervals and tests with exact inputs (docs/evals.md, "Scores").

Counts are `Fraction`s (a case with repetitions scores passes / runs), so a
rate is exact. Interval bounds need square roots: they are computed in
50-digit Decimal arithmetic, far beyond what any report prints. A *decision*
that depends on a square root (is the Newcombe lower bound above 0?) is not
taken from those digits: `newcombe_lower_positive` decides it exactly, with
rational arithmetic on squared quantities, so no rounding can flip a verdict.
The Fisher test is in `evals._fisher`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import TypeVar

T = TypeVar("T", float, Decimal)

# z for a two-sided 95% interval, exactly as the overfit rule writes it (1.96, not 1.959964…).
Z = Decimal("1.96")
_Z = Fraction(Z)
_Z2 = _Z * _Z

PRECISION = 50  # digits for every square root below


def _decimal(value: Fraction) -> Decimal:
    # Call inside a PRECISION context: the quotient is rounded to the context's digits.
    return Decimal(value.numerator) / Decimal(value.denominator)


def wilson(x: Fraction | int, n: int, z: Decimal = Z) -> tuple[Decimal, Decimal]:
    """The Wilson interval of x successes in n trials (x may be fractional, 0 <= x <= n):
    95% two-sided with the default z."""
    if n <= 0:
        raise ValueError("an interval needs at least one trial")
    p = Fraction(x) / n
    if not 0 <= p <= 1:
        raise ValueError(f"{x} successes out of {n} trials is not a proportion")
    with localcontext() as ctx:
        ctx.prec = PRECISION
        pd = _decimal(p)
        nn = Decimal(n)
        z2 = z * z
        denominator = 1 + z2 / nn
        centre = (pd + z2 / (2 * nn)) / denominator
        half = z / denominator * (pd * (1 - pd) / nn + z2 / (4 * nn * nn)).sqrt()
        # The exact bounds lie in [0, 1]; the clamp only absorbs last-digit rounding.
        return max(Decimal(0), centre - half), min(Decimal(1), centre + half)


def newcombe(x1: Fraction | int, n1: int, x2: Fraction | int, n2: int) -> tuple[Decimal, Decimal]:
    """Newcombe's hybrid-score (method 10) 95% interval of p1 - p2, p_i = x_i / n_i.

    For display. Whether the lower bound is above 0 is a verdict, and is
    decided by `newcombe_lower_positive` instead: 50 digits would only fail
    if the bound were within ~1e-45 of 0, but exact arithmetic costs nothing
    at these sizes and leaves no argument to make.
    """
    l1, u1 = wilson(x1, n1)
    l2, u2 = wilson(x2, n2)
    with localcontext() as ctx:
        ctx.prec = PRECISION
        p1 = _decimal(Fraction(x1) / n1)
        p2 = _decimal(Fraction(x2) / n2)
        d = p1 - p2
        low = d - ((p1 - l1) ** 2 + (u2 - p2) ** 2).sqrt()
        high = d + ((u1 - p1) ** 2 + (p2 - l2) ** 2).sqrt()
        return low, high


def _wilson_exact(p: Fraction, n: int) -> tuple[Fraction, Fraction]:
    """(c - p, h²): the Wilson centre's offset from p and the squared half-width, both rational.

    The interval is c ± h with c = (p + z²/2n) / (1 + z²/n) and
    h = z / (1 + z²/n) · sqrt(p(1-p)/n + z²/4n²), so h² is rational too.
    The bounds need no clamping: c - h >= 0 and c + h <= 1 hold exactly.
    """
    denominator = 1 + _Z2 / n
    centre = (p + _Z2 / (2 * n)) / denominator
    half_squared = _Z2 / (denominator * denominator) * (p * (1 - p) / n + _Z2 / (4 * n * n))
    return centre - p, half_squared


def _sign(value: Fraction) -> int:
    return (value > 0) - (value < 0)


def _sign_root(a: Fraction, b: Fraction, m: Fraction) -> int:
    """The exact sign of a + b·√m (m >= 0)."""
    sa, sb = _sign(a), _sign(b) if m else 0
    if sb == 0 or sa == sb:
        return sa or sb
    if sa == 0:
        return sb
    # Opposite signs: the term with the larger square wins.
    return _sign(a * a - b * b * m) * sa


def _sign_two_roots(p: Fraction, q: Fraction, m: Fraction, s: Fraction, t: Fraction) -> int:
    """The exact sign of p + q·√m + s·√t (m, t >= 0)."""
    st = _sign(s) if t else 0
    sp = _sign_root(p, q, m)  # the sign of T = p + q·√m
    if st == 0 or sp == st:
        return sp or st
    if sp == 0:
        return st
    # Opposite signs: compare T² = p² + q²m + 2pq·√m with (s·√t)² = s²t.
    return _sign_root(p * p + q * q * m - s * s * t, 2 * p * q, m) * sp


def newcombe_lower_positive(x1: Fraction | int, n1: int, x2: Fraction | int, n2: int) -> bool:
    """Whether Newcombe's lower bound for p1 - p2 is above 0, decided exactly.

    L = d - sqrt(X1² + X2²) with d = p1 - p2, X1 = p1 - l1 = (p1 - c1) + h1 and
    X2 = u2 - p2 = (c2 - p2) + h2 (both >= 0). So L > 0 iff d > 0 and
    d² - (p1-c1)² - h1² - (c2-p2)² - h2² - 2(p1-c1)·h1 - 2(c2-p2)·h2 > 0, a sum
    of a rational and two rational multiples of square roots of rationals,
    whose sign is found by squaring: no rounding at any step.
    """
    if n1 <= 0 or n2 <= 0:
        raise ValueError("an interval needs at least one trial")
    p1, p2 = Fraction(x1) / n1, Fraction(x2) / n2
    d = p1 - p2
    if d <= 0:
        return False
    offset1, h1_squared = _wilson_exact(p1, n1)
    offset2, h2_squared = _wilson_exact(p2, n2)
    a1 = -offset1  # p1 - c1
    a2 = offset2  # c2 - p2
    rest = d * d - a1 * a1 - h1_squared - a2 * a2 - h2_squared
    return _sign_two_roots(rest, -2 * a1, h1_squared, -2 * a2, h2_squared) > 0


def round_half_up(value: Fraction | int) -> int:
    """The nearest integer, halves away from zero for the non-negative counts used here."""
    return math.floor(Fraction(value) + Fraction(1, 2))


def stability(cases: Sequence[tuple[int, int]]) -> Decimal | None:
    """Mean within-case population standard deviation over the cases run at least twice.

    A case's runs are 0/1 outcomes with mean s = passes / runs, so their
    population SD is sqrt(s(1 - s)). Single-run cases have no spread to
    measure and are left out of the mean; None when no case ran twice.
    """
    repeated = [(passes, runs) for passes, runs in cases if runs >= 2]
    if not repeated:
        return None
    with localcontext() as ctx:
        ctx.prec = PRECISION
        total = Decimal(0)
        for passes, runs in repeated:
            s = Fraction(passes, runs)
            total += _decimal(s * (1 - s)).sqrt()
        return total / len(repeated)


# Student's t for a two-sided 95% interval, by degrees of freedom (the standard
# table's values to three places). Between rows the next smaller df is used, a
# slightly larger t: the interval errs wide, never narrow.
_T95 = (
    (1, "12.706"), (2, "4.303"), (3, "3.182"), (4, "2.776"), (5, "2.571"), (6, "2.447"),
    (7, "2.365"), (8, "2.306"), (9, "2.262"), (10, "2.228"), (11, "2.201"), (12, "2.179"),
    (13, "2.160"), (14, "2.145"), (15, "2.131"), (16, "2.120"), (17, "2.110"), (18, "2.101"),
    (19, "2.093"), (20, "2.086"), (21, "2.080"), (22, "2.074"), (23, "2.069"), (24, "2.064"),
    (25, "2.060"), (26, "2.056"), (27, "2.052"), (28, "2.048"), (29, "2.045"), (30, "2.042"),
    (40, "2.021"), (60, "2.000"), (120, "1.980"), (1000, "1.962"),
)  # fmt: skip


def t95(df: int) -> Decimal:
    """Student's t quantile for a two-sided 95% interval with `df` degrees of freedom."""
    if df < 1:
        raise ValueError("t needs at least one degree of freedom")
    return next(Decimal(text) for row_df, text in reversed(_T95) if df >= row_df)


def mean_interval(values: Sequence[Decimal]) -> tuple[Decimal, Decimal | None, Decimal | None]:
    """The mean of `values` and its 95% Student-t interval (None, None for fewer than two).

    For per-check metrics (F1, similarity …) of a report: the values are per
    case, so the case is the unit, as for rates.
    """
    if not values:
        raise ValueError("no values")
    with localcontext() as ctx:
        ctx.prec = PRECISION
        n = len(values)
        mean = sum(values, Decimal(0)) / n
        if n < 2:
            return mean, None, None
        variance = sum(((v - mean) ** 2 for v in values), Decimal(0)) / (n - 1)
        half = t95(n - 1) * variance.sqrt() / Decimal(n).sqrt()
        return mean, mean - half, mean + half


def rounded(value: Decimal | Fraction, places: int = 4) -> Decimal:
    """For display and JSON: half-even rounding to `places` decimals."""
    with localcontext() as ctx:
        ctx.prec = PRECISION
        number = _decimal(value) if isinstance(value, Fraction) else value
        return number.quantize(Decimal(1).scaleb(-places))


def significant(value: Fraction | Decimal, digits: int = 4) -> Decimal:
    """For display and JSON: `digits` significant digits, half-even (0 stays 0), so a p of
    3e-9 is not 0.0000.

    A Decimal of at most PRECISION digits is read as the Fraction of its value would be
    (`rounded` would turn that Fraction back into the same Decimal, and its floor(log10)
    is `adjusted()`): the digits of decimal bounds of a p are the digits of those bounds.
    """
    if value == 0:
        return Decimal(0)
    if isinstance(value, Decimal):
        return rounded(value, max(0, digits - 1 - value.adjusted()))
    return rounded(value, max(0, digits - 1 - floor_log10(value)))


def floor_log10(value: Fraction) -> int:
    """The largest e with 10**e <= value (> 0), exactly.

    From bit lengths, not decimal strings: Python refuses str() of an int over 4,300
    digits, and a p of a table of 50,000 cases a side has a denominator longer than that.
    """
    if value <= 0:
        raise ValueError(f"no logarithm of {value}")
    bits = value.numerator.bit_length() - value.denominator.bit_length()
    # log2(value) is within 1 of `bits`, so this is within 1 of the answer.
    exponent = math.floor(bits * math.log10(2))
    while Fraction(10) ** exponent > value:
        exponent -= 1
    while Fraction(10) ** (exponent + 1) <= value:
        exponent += 1
    return exponent


def nearest_rank(values: Sequence[T], q: int) -> T | None:
    """The q-th percentile by the nearest-rank method (a value that occurred); None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, -(-q * len(ordered) // 100) - 1)]


def rounded_ms(value: float | None) -> float | None:
    """A latency for display: 0.1 ms."""
    return None if value is None else round(value, 1)
