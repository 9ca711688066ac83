"""The overfit warning (docs/evals.md, "Scores"): better on public cases than on the holdout?

Per suite, with the case as the unit (x = Σ passes_i / runs_i over n cases):

- gap d = x_pub/n_pub - x_hold/n_hold, compared with the suite's δ exactly
  (`Fraction`; a gap of exactly δ counts);
- Newcombe's hybrid-score 95% interval of d must lie above 0 (decided exactly,
  see `evals._stats.newcombe_lower_positive`);
- the one-sided Fisher exact test on the counts rounded half up must be
  significant at 0.025, with Holm's step-down across the suites of one eval.

`warn` when all three hold, `inconclusive` when the gap reaches δ but a test
does not, `none` otherwise (and whenever a split is empty: nothing to compare).

Holm's family is every suite of the eval that has both splits, whatever its
gap: each such suite's Fisher p is a test of "no overfit" on that suite. Holm
is applied through its adjusted p-values, p_holm(k) = max_{j <= k} (S - j + 1)·p_(j)
over the p-values in ascending order, and a suite's test is significant iff
p_holm < 0.025. That is the step-down exactly (smallest p against 0.025/S,
next against 0.025/(S-1), ..., stopping at the first non-rejection), and one
number per suite says so. Equal p-values are ordered by suite id; the order
among equals changes only the step `alpha` a suite reports, never a verdict.

The p-values are `evals._fisher.TailP`s: certified intervals, computed in time linear in
the counts, that fall back on the exact p only where an interval cannot decide (an order,
a running max, a side of ALPHA, a displayed digit). Every verdict and every digit shown
is therefore the exact p's, as when each p was an exact Fraction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from functools import cmp_to_key
from typing import Any

from evals._fisher import TailP, compare, fisher_tail, larger
from evals._stats import Z, newcombe, newcombe_lower_positive, round_half_up, rounded, significant
from evals.suites._model import DEFAULT_OVERFIT_DELTA

# The verdict's codes and its JSON are declared with the record that keeps them. Only
# scoring imports this module, and it loads the record anyway (evals._scores); a practice
# run (`holon test`) scores nothing and loads neither.
from records import OverfitVerdictCode, RecordOverfit

__all__ = ["ALPHA", "OVERFIT_RULE", "OverfitVerdict", "SuiteSplits", "overfit_verdicts"]

ALPHA = Fraction(1, 40)  # 0.025: one-sided, the upper tail of a two-sided 5% test
# The rule as reports state it (the module's docstring says why), from the constants it uses.
OVERFIT_RULE = (
    "per suite, warn when the public rate exceeds the holdout rate by at least the "
    f"suite's delta (default {DEFAULT_OVERFIT_DELTA}), Newcombe's interval of the gap "
    f"(z = {Z}) lies above 0, and the one-sided Fisher exact test is significant at "
    f"alpha {float(ALPHA)} after Holm's step-down across the eval's suites; inconclusive "
    "when the gap reaches delta but a test does not; none otherwise"
)


@dataclass(frozen=True)
class SuiteSplits:
    """One suite's public and holdout totals: x = Σ case scores over n cases (n = 0: empty)."""

    suite_id: str
    public_x: Fraction
    public_n: int
    holdout_x: Fraction
    holdout_n: int
    delta: Decimal = DEFAULT_OVERFIT_DELTA

    def __post_init__(self) -> None:
        for x, n in ((self.public_x, self.public_n), (self.holdout_x, self.holdout_n)):
            if n < 0 or not 0 <= x <= n:
                raise ValueError(f"suite {self.suite_id}: {x} passed of {n} cases")
        if not 0 < self.delta <= 1:
            raise ValueError(f"suite {self.suite_id}: overfit delta {self.delta} not in (0, 1]")

    @property
    def compared(self) -> bool:
        """Both splits have cases, so there is a gap to test."""
        return self.public_n > 0 and self.holdout_n > 0


@dataclass(frozen=True)
class OverfitVerdict:
    """A suite's verdict and the numbers behind it (None where a split is empty).

    `p_value` is the raw one-sided Fisher p; `p_holm` the Holm-adjusted one
    (significant iff < ALPHA), both intervals that give their exact value on demand;
    `alpha` the step threshold ALPHA/(S - rank) this suite's p met in the step-down,
    `tests` the family size S.
    """

    suite_id: str
    verdict: OverfitVerdictCode
    delta: Fraction
    public_n: int
    holdout_n: int
    public_rate: Fraction | None = None
    holdout_rate: Fraction | None = None
    gap: Fraction | None = None
    newcombe_ci95: tuple[Decimal, Decimal] | None = None
    newcombe_positive: bool | None = None  # the exact decision, not read off the digits
    p_value: TailP | None = None
    p_holm: TailP | None = None
    alpha: Fraction | None = None
    tests: int = 0

    @property
    def gap_reached(self) -> bool:
        return self.gap is not None and self.gap >= self.delta

    @property
    def significant(self) -> bool:
        """Both tests: the Newcombe lower bound above 0 and Fisher (after Holm) below ALPHA."""
        return bool(self.newcombe_positive) and self.p_holm is not None and self.p_holm.below(ALPHA)

    def detail(self) -> str:
        """One line for a warning or a report: the numbers that made the verdict."""
        if (
            self.gap is None
            or self.public_rate is None
            or self.holdout_rate is None
            or self.newcombe_ci95 is None
            or self.p_value is None
            or self.p_holm is None
        ):
            return f"no comparison: public {self.public_n} cases, holdout {self.holdout_n}"
        low, high = self.newcombe_ci95
        return (
            f"public {_pct(self.public_rate)} of {self.public_n} cases, holdout "
            f"{_pct(self.holdout_rate)} of {self.holdout_n}: gap {_pct(self.gap)} "
            f"(delta {_pct(self.delta)}), Newcombe 95% CI [{rounded(low)}, {rounded(high)}], "
            f"Fisher one-sided p = {self.p_value.significant()} "
            f"(Holm-adjusted {self.p_holm.significant()} over {self.tests} suite"
            f"{'' if self.tests == 1 else 's'}, alpha {significant(ALPHA)})"
        )

    def to_json(self) -> dict[str, Any]:
        """The record's `overfit` object (docs/evals.md), as `records.RecordOverfit` writes it."""
        return self.record().to_json()

    def record(self) -> RecordOverfit:
        """The verdict as the record keeps it, rounded for display: rates and gaps to 4
        places; p-values and alpha to 4 significant digits (a p of 3e-9 is not 0.0000)."""
        interval = self.newcombe_ci95
        ci95 = None if interval is None else (rounded(interval[0]), rounded(interval[1]))
        return RecordOverfit(
            verdict=self.verdict,
            gap=None if self.gap is None else rounded(self.gap),
            p_value=None if self.p_value is None else self.p_value.significant(),
            p_holm=None if self.p_holm is None else self.p_holm.significant(),
            alpha=None if self.alpha is None else significant(self.alpha),
            tests=self.tests,
            delta=rounded(self.delta),
            newcombe_ci95=ci95,
            public_rate=_rate(self.public_rate),
            public_total=self.public_n,
            holdout_rate=_rate(self.holdout_rate),
            holdout_total=self.holdout_n,
        )


_Holm = tuple[TailP, TailP, Fraction]  # a tested suite's p, its Holm-adjusted p, its step alpha


def overfit_verdicts(suites: Sequence[SuiteSplits]) -> dict[str, OverfitVerdict]:
    """The verdict of every suite of one eval, Holm's correction across them."""
    ids = [s.suite_id for s in suites]
    if len(set(ids)) != len(ids):
        raise ValueError(f"suite ids repeat: {sorted(ids)}")
    tested = sorted(
        ((_fisher(s), s.suite_id) for s in suites if s.compared), key=cmp_to_key(_by_p_then_id)
    )
    family = len(tested)
    holm: dict[str, _Holm] = {}  # id -> (p, p_holm, step alpha)
    running: TailP | None = None  # the running max; every p is above 0
    for rank, (p, suite_id) in enumerate(tested):
        scaled = p.scaled(family - rank)  # min(1, (S - rank)·p)
        running = scaled if running is None else larger(running, scaled)
        holm[suite_id] = (p, running, ALPHA / (family - rank))
    return {s.suite_id: _verdict(s, holm.get(s.suite_id), family) for s in suites}


def _by_p_then_id(a: tuple[TailP, str], b: tuple[TailP, str]) -> int:
    # The exact order of (p, suite id): intervals that decide it, the exact p where not.
    return compare(a[0], b[0]) or (a[1] > b[1]) - (a[1] < b[1])


def _fisher(s: SuiteSplits) -> TailP:
    # The test counts cases: fractional totals (repetitions) are rounded half up.
    return fisher_tail(
        round_half_up(s.public_x), s.public_n, round_half_up(s.holdout_x), s.holdout_n
    )


def _verdict(s: SuiteSplits, holm: _Holm | None, family: int) -> OverfitVerdict:
    delta = Fraction(s.delta)
    public_rate = s.public_x / s.public_n if s.public_n else None
    holdout_rate = s.holdout_x / s.holdout_n if s.holdout_n else None
    # A suite with an empty split is not compared: its verdict is none, with no test.
    uncompared = OverfitVerdict(
        suite_id=s.suite_id,
        verdict="none",
        delta=delta,
        public_n=s.public_n,
        holdout_n=s.holdout_n,
        public_rate=public_rate,
        holdout_rate=holdout_rate,
        tests=family,
    )
    if public_rate is None or holdout_rate is None or holm is None:
        return uncompared
    gap = public_rate - holdout_rate
    positive = newcombe_lower_positive(s.public_x, s.public_n, s.holdout_x, s.holdout_n)
    p_value, p_holm, alpha = holm
    verdict: OverfitVerdictCode = "none"
    if gap >= delta:
        verdict = "warn" if positive and p_holm.below(ALPHA) else "inconclusive"
    return replace(
        uncompared,
        verdict=verdict,
        gap=gap,
        newcombe_ci95=newcombe(s.public_x, s.public_n, s.holdout_x, s.holdout_n),
        newcombe_positive=positive,
        p_value=p_value,
        p_holm=p_holm,
        alpha=alpha,
    )


def _rate(value: Fraction | None) -> Decimal | None:
    return None if value is None else rounded(value)


def _pct(value: Fraction) -> str:
    return f"{rounded(value * 100, 1)}%"
