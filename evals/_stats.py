"""Rates and intervals with exact inputs (EVALS.md, "Scores"; OVERFIT.md, "Formulas").

Counts are `Fraction`s (a case with repetitions scores passes / runs), so a
rate is exact; interval bounds need a square root and are computed in
40-digit Decimal arithmetic, far beyond what any report prints.
"""

from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

Z = Decimal("1.96")


def _decimal(value: Fraction) -> Decimal:
    return Decimal(value.numerator) / Decimal(value.denominator)


def wilson(x: Fraction | int, n: int) -> tuple[Decimal, Decimal]:
    """The Wilson 95% interval of x successes in n trials (x may be fractional)."""
    if n <= 0:
        raise ValueError("an interval needs at least one trial")
    with localcontext() as ctx:
        ctx.prec = 40
        p = _decimal(Fraction(x) / n)
        nn = Decimal(n)
        z2 = Z * Z
        denominator = 1 + z2 / nn
        centre = (p + z2 / (2 * nn)) / denominator
        half = Z / denominator * (p * (1 - p) / nn + z2 / (4 * nn * nn)).sqrt()
        return max(Decimal(0), centre - half), min(Decimal(1), centre + half)


def rounded(value: Decimal | Fraction, places: int = 4) -> Decimal:
    """For display and JSON: half-even rounding to `places` decimals."""
    number = _decimal(value) if isinstance(value, Fraction) else value
    return number.quantize(Decimal(1).scaleb(-places))
