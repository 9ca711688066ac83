"""The one-sided Fisher exact test: a certified interval in floats, exact where it must be.

p = Σ_{k >= x1} t_k, t_k = C(s, k)·C(f, n1 - k) / C(N, n1) (N = n1 + n2, s = x1 + x2,
f = N - s): the chance, with the margins fixed, of a group-1 count at least as large.

`fisher_one_sided` is that sum in exact integers, as a `Fraction`: the reference. Its cost
grows faster than the table (its binomials are numbers of about N bits, and `math.comb` on
CPython 3.11 is far from linear: 7 s for C(10^6, 5·10^5) alone), so a report of 100,000
cells spent seconds in it and one of 10^6 would spend minutes.

`fisher_tail` returns a `TailP` instead: an interval [lo, hi] that provably holds p,
computed in floats in time linear in the table (better near the mode, see `_sum`), and
the exact `Fraction` only on demand. Its helpers (`below`, `compare`, `larger`,
`significant`) answer from the interval when it decides, and from the exact p when it
does not, so every decision and every displayed digit is the exact value's.

The float computation, and its bound
------------------------------------
No binomial is formed. Terms are measured in units of the mode's term t_m (the largest):
walking from m by the ratio r_k = t_{k+1}/t_k = (s-k)(n1-k) / ((k+1)(f-n1+k+1)), the
upper tail B = Σ_{k >= x1} t_k/t_m and the lower part A = Σ_{k < x1} t_k/t_m are summed
(the lower part as the upper tail of the mirrored table, K' = n1 - K, whose ratios are the
downward ones), and p = B / (A + B). Both sums are of positive terms, so each has a small
relative error whatever p is: p is never 1 minus the other side, and stays accurate near
1 and at 1e-5000 alike. The far side's terms, tiny next to t_m, are carried as a float
mantissa and an integer power of two (exact rescaling by `math.frexp`), so nothing
underflows; the final ratio is taken in exact `Fraction` arithmetic on those floats.

Roundings (u = 2^-53, γ_n = n·u / (1 - n·u), all integers below 2^53 so exact as floats):
each step of a walk costs 4 roundings (the two products of the ratio, its quotient, the
product with the running term), so a term j steps from its start is within γ_{4j} of its
value; a naive sum of n positive terms adds at most γ_{n-1} relative to its total. A sum
of n terms taken in n steps is therefore within γ_{5n}, and a tail reached after a walk
of w steps is within γ_{4w + 5n} (products of (1 + γ) factors: γ_a + γ_b + γ_a·γ_b <= γ_{a+b}).
The bound used is twice that, 2·γ_R with R the counted roundings, and is stated as exact
`Fraction`s. A sum stops early where what is left is provably below 2^-70 of it (the
ratios fall as k leaves the mode, so the rest is below t·r/(1 - r), tested only where
r <= 1 - 2^-20 so that 1 - r is itself accurate); the interval's upper end then adds
2^-60 of the sum, far above that remainder. This stopping makes a table's cost the walk
from the mode to x1 plus about 10 standard deviations each side: linear at worst.
With A and B each within ε = 2·γ_R (+ 2^-60), p = B/(A + B) lies in
[B(1-ε) / (B(1-ε) + A(1+ε)), B(1+ε) / (B(1+ε) + A(1-ε))], taken exactly and then rounded
outwards to 128 bits: a relative width of at most about 4ε.

For a table of 10^6 cells the relative width is about 10^-9: two ends round to the same
4 significant digits, and fall on the same side of a threshold, unless p is within that
of a rounding boundary or the threshold, and only then is the exact p computed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import MAX_EMAX, MIN_EMIN, ROUND_CEILING, ROUND_FLOOR, Context, Decimal
from fractions import Fraction
from functools import cached_property

from evals._stats import significant

__all__ = ["TailP", "compare", "fisher_one_sided", "fisher_tail", "larger"]

_STOP = 2.0**-70  # a sum stops where what is left is below this share of it
_CLEARLY_BELOW_ONE = 1 - 2.0**-20  # ... tested only where 1 - r is accurate
_FLOOR = 2.0**-900  # a term this small is nothing next to a sum of at least 1
_RESCALE = 2.0**-500  # a walk's term is renormalised below this (never subnormal)
_SLACK = Fraction(1, 2**60)  # added to an upper end for a stopped sum (its rest < 2^-68)
_LARGEST = 2**52  # larger tables take the exact path: the float counters must stay exact
_BITS = 128  # an interval's ends are rounded outwards to this many bits (to stay cheap)
# Decimal bounds of an end, each operation rounded outwards; 50 digits as `rounded` reads a
# Fraction, so an end's display is exactly that of the Fraction the bound stands for.
_DOWN = Context(prec=50, rounding=ROUND_FLOOR, Emin=MIN_EMIN, Emax=MAX_EMAX)
_UP = Context(prec=50, rounding=ROUND_CEILING, Emin=MIN_EMIN, Emax=MAX_EMAX)
_JUST_BELOW_ONE = Decimal("0." + "9" * 50)
_NEAR_ONE = Fraction(_JUST_BELOW_ONE)  # compared as a Fraction: a Decimal would convert the end


def fisher_one_sided(x1: int, n1: int, x2: int, n2: int) -> Fraction:
    """One-sided Fisher exact p for "group 1's rate exceeds group 2's", exactly: the reference.

    p = Σ_{k >= x1} C(s, k)·C(N - s, n1 - k) / C(N, n1), N = n1 + n2, s = x1 + x2:
    the chance, with the margins fixed, of a group-1 count at least as large.
    """
    total, successes, failures, low, high = _margins(x1, n1, x2, n2)
    whole = math.comb(total, n1)
    # Sum the shorter side, each term from the last by the hypergeometric ratio
    # (exact: every term is an integer, so multiplying first divides evenly). Two
    # binomials per term made a report of 200,000 cells spend minutes here.
    if high - x1 <= x1 - low:
        return Fraction(_terms(x1, high, successes, failures, n1), whole)
    return 1 - Fraction(_terms(low, x1 - 1, successes, failures, n1), whole)


def _margins(x1: int, n1: int, x2: int, n2: int) -> tuple[int, int, int, int, int]:
    """N, s, f and the k a table with these margins can have (low..high); checks the table."""
    if n1 < 0 or n2 < 0 or not (0 <= x1 <= n1 and 0 <= x2 <= n2):
        raise ValueError(f"not a 2x2 table: {x1}/{n1} against {x2}/{n2}")
    total, successes = n1 + n2, x1 + x2
    failures = total - successes
    return total, successes, failures, max(0, n1 - failures), min(successes, n1)


def _terms(first: int, last: int, successes: int, failures: int, n1: int) -> int:
    """Σ_{k = first..last} C(successes, k)·C(failures, n1 - k) (0 for an empty range)."""
    if last < first:
        return 0
    term = math.comb(successes, first) * math.comb(failures, n1 - first)
    total = term
    for k in range(first, last):
        # C(s, k+1)/C(s, k) = (s-k)/(k+1); C(f, n1-k-1)/C(f, n1-k) = (n1-k)/(f-n1+k+1)
        term = term * (successes - k) * (n1 - k) // ((k + 1) * (failures - n1 + k + 1))
        total += term
    return total


@dataclass(frozen=True)
class TailP:
    """A probability known to lie in [lo, hi]: min(1, factor·p) for the Fisher p of `table`.

    `factor` is 1 for a raw p and S - rank for a Holm-scaled one (`scaled`). The exact
    value is computed the first time something asks for it and kept; two TailPs of the
    same table and factor are equal (they are the same number).
    """

    lo: Fraction
    hi: Fraction
    table: tuple[int, int, int, int]
    factor: int = 1

    def __repr__(self) -> str:
        # Not the ends' digits: str() refuses an int of over 4,300 (a p of 1e-5000 has them).
        low, high = _decimal_bound(self.lo, _DOWN), _decimal_bound(self.hi, _UP)
        return f"TailP({self.table}, factor={self.factor}, in [{low:.6}, {high:.6}])"

    def exact(self) -> Fraction:
        """The exact value (computed once, by the reference, unless the interval is a point)."""
        return self._exact

    @cached_property
    def _exact(self) -> Fraction:
        if self.lo == self.hi:
            return self.lo
        return min(Fraction(1), self.factor * fisher_one_sided(*self.table))

    @property
    def computed(self) -> bool:
        """Whether the exact value was needed (so far); tests and benches count these."""
        return "_exact" in self.__dict__ and self.lo != self.hi

    def below(self, bound: Fraction) -> bool:
        """value < bound, exactly."""
        if self.hi < bound:
            return True
        if self.lo >= bound:
            return False
        return self.exact() < bound

    def scaled(self, factor: int) -> TailP:
        """min(1, factor·value): Holm's adjustment (factor >= 1)."""
        one = Fraction(1)
        return TailP(
            min(one, factor * self.lo), min(one, factor * self.hi), self.table, factor * self.factor
        )

    def significant(self, digits: int = 4) -> Decimal:
        """`evals._stats.significant` of the exact value, from the interval when its ends agree.

        That rounding is monotone (a 50-digit quotient, then half-even to the places
        that floor(log10) gives, which is monotone too), so ends with the same digits
        and the same exponent enclose only values that display the same.
        """
        low = significant(_decimal_bound(self.lo, _DOWN), digits)
        if _NEAR_ONE <= self.hi < 1:
            # Closer to 1 than 50 digits tell (1 - 1e-300000): every value from the bound
            # up to 1, 1 excluded, displays as the bound does.
            high = significant(_JUST_BELOW_ONE, digits)
        else:
            high = significant(_decimal_bound(self.hi, _UP), digits)
        if low.as_tuple() == high.as_tuple():
            return low
        return significant(self.exact(), digits)


def compare(a: TailP, b: TailP) -> int:
    """-1, 0 or 1 as a's exact value is below, equal to or above b's."""
    if a.hi < b.lo:
        return -1
    if b.hi < a.lo:
        return 1
    if (a.table, a.factor) == (b.table, b.factor):
        return 0
    x, y = a.exact(), b.exact()
    return (x > y) - (x < y)


def larger(a: TailP, b: TailP) -> TailP:
    """The larger of the two by exact value (a when equal, as `max` keeps its first)."""
    return a if compare(a, b) >= 0 else b


def fisher_tail(x1: int, n1: int, x2: int, n2: int) -> TailP:
    """The one-sided Fisher p of the table as a `TailP` (the module's docstring says how)."""
    total, successes, failures, low, high = _margins(x1, n1, x2, n2)
    table = (x1, n1, x2, n2)
    if x1 <= low:  # every table with these margins counts
        return TailP(Fraction(1), Fraction(1), table)
    if total >= _LARGEST:
        p = fisher_one_sided(x1, n1, x2, n2)
        return TailP(p, p, table)
    mode = min(max((n1 + 1) * (successes + 1) // (total + 2), low), high)
    b_lo, b_hi = _tail(successes, failures, n1, mode, x1, high)
    # The lower part, k <= x1 - 1, is the mirrored table's upper tail from n1 - x1 + 1.
    a_lo, a_hi = _tail(failures, successes, n1, n1 - mode, n1 - x1 + 1, n1 - low)
    # B / (A + B) rises with B and falls with A: the ends pair the bounds so.
    return TailP(
        _outwards(b_lo / (b_lo + a_hi), up=False), _outwards(b_hi / (b_hi + a_lo), up=True), table
    )


def _outwards(value: Fraction, *, up: bool) -> Fraction:
    """value rounded down (or up) to _BITS significant bits: m·2^e with m < 2^(_BITS + 1).

    The exact ends can hold numbers of a million bits (a p of 1e-300000, or 1 - 1e-300000);
    compared, scaled and displayed, such Fractions cost superlinear time. Rounded outwards,
    the interval still holds p, and is wider by 2^-127 of it.
    """
    n, d = value.numerator, value.denominator
    shift = n.bit_length() - d.bit_length() - _BITS  # value·2^-shift is in [2^(B-1), 2^(B+1))
    if shift >= 0:
        n, d = n, d << shift
    else:
        n, d = n << -shift, d
    m = -(-n // d) if up else n // d  # one long division by a quotient of _BITS bits: linear
    bound = Fraction(m) * (Fraction(2) ** shift)
    # A p below 1 keeps an upper end below 1 (its display is 1.0000, 1's is 1.000), even
    # within 2^-128 of 1: then the end stays as it was.
    return value if up and bound >= 1 > value else bound


def _decimal_bound(value: Fraction, context: Context) -> Decimal:
    """A bound of a non-negative value in `context`'s direction (an end of `_outwards`: a small
    numerator, and a power of two), every operation rounded that way."""
    n, d = value.numerator, value.denominator
    if d & (d - 1):  # not an end of `_outwards` (an exact p, an interval built otherwise)
        return context.divide(Decimal(n), Decimal(d))
    result, base, k = Decimal(n), Decimal("0.5"), d.bit_length() - 1
    # n·(1/2)^k by squaring: products of positive bounds, each rounded the same way.
    while k:
        if k & 1:
            result = context.multiply(result, base)
        k >>= 1
        if k:
            base = context.multiply(base, base)
    return result


def _tail(s: int, f: int, n1: int, mode: int, k0: int, high: int) -> tuple[Fraction, Fraction]:
    """Bounds of Σ_{k = k0..high} t_k / t_mode (k0 <= high), t the hypergeometric terms."""
    if k0 > mode:
        mantissa, exponent = _walk(s, f, n1, mode, k0)
        total, steps, stopped = _sum(s, f, n1, k0, high, 1.0, 1.0)
        rounds = 4 * (k0 - mode) + 5 * steps
        scale = Fraction(mantissa) * (Fraction(2) ** exponent)
    else:
        # The mode's term is 1; upwards to high, then downwards (the mirrored table's upwards).
        total, up, stopped_up = _sum(s, f, n1, mode, high, 1.0, 1.0)
        total, down, stopped_down = _sum(f, s, n1, n1 - mode, n1 - k0, 1.0, total)
        rounds, stopped, scale = 5 * (up + down), stopped_up or stopped_down, Fraction(1)
    value = Fraction(total) * scale
    error = Fraction(2 * rounds, 2**53 - rounds)  # 2·γ_R: the bound, padded twice over
    return value * (1 - error), value * (1 + error + (_SLACK if stopped else 0))


def _walk(s: int, f: int, n1: int, k: int, last: int) -> tuple[float, int]:
    """t_last / t_k as mantissa·2^exponent (last > k >= the mode), in 4 roundings a step."""
    a, b, c, d = float(s - k), float(n1 - k), float(k + 1), float(f - n1 + k + 1)
    term, exponent = 1.0, 0
    for _ in range(last - k):
        term *= (a * b) / (c * d)
        a, b, c, d = a - 1.0, b - 1.0, c + 1.0, d + 1.0
        if term < _RESCALE:  # exact: a power of two moves to the exponent
            term, shift = math.frexp(term)
            exponent += shift
    return term, exponent


def _sum(
    s: int, f: int, n1: int, k: int, last: int, term: float, total: float
) -> tuple[float, int, bool]:
    """total + Σ t_j / t_k·term for j = k+1..last, away from the mode (so the ratios are <= 1
    and fall); stops early where the rest is provably negligible (the module's docstring).
    Returns the sum, the steps taken and whether it stopped early. `total` must be >= 1."""
    a, b, c, d = float(s - k), float(n1 - k), float(k + 1), float(f - n1 + k + 1)
    steps = last - k
    for step in range(steps):
        ratio = (a * b) / (c * d)
        term *= ratio
        if term < _FLOOR or (ratio <= _CLEARLY_BELOW_ONE and term <= _STOP * total * (1.0 - ratio)):
            # The rest from here on, this term included, is below term·1/(1 - ratio)
            # (at most N·2^-900 under the floor): under 2^-68 of a total >= 1.
            return total, step, True
        total += term
        a, b, c, d = a - 1.0, b - 1.0, c + 1.0, d + 1.0
    return total, steps, False
