"""The lower-bound gate: an eval score as evidence, paid for selection (docs/integrity.md).

An author who runs evals until one is lucky has selected, and the luckiest
of k draws overstates the truth. `eval_score_lower` is the lower end of the
two-sided (1 - alpha_k) Wilson interval of each graded split, k being every
org's holdout-revealing evals on that suite (every instance set, operator
resets included: a reset forgives the budget, not the evidence; every org,
since one author may hold many and the store cannot tell), with

    alpha_k = ALPHA / (k (k + 1)),   so that   sum over k of alpha_k = ALPHA.

Why not ALPHA / k (Bonferroni over k evals)? That pays for an author who runs
k evals and then keeps the best, but the record is always the *latest* eval
(records follow registrations), so an author's real move is to stop as soon
as one is lucky; against that, ALPHA / k admitted a coin-flipping agent at its
true accuracy in 14% of simulated runs (tests/integrity/test_simulation.py).
With alpha_k summing to ALPHA, whatever rule the author stops by, the chance
that any of its records is admitted above its true accuracy is at most
ALPHA / 2 (one side of each interval). The price: at k = 1 the bound is the
97.5% interval's (z = 2.2414), a little below the record's `ci95`.
Decisions are exact: rational arithmetic on squared quantities, as the overfit
rule's Newcombe test is (evals._stats).

Pure and standard-library only: mandates decide on every live call with it (the
record's type is read by the type checker alone).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from statistics import NormalDist
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from records import AgentRecord

__all__ = [
    "ALPHA",
    "LOWER_BOUND_RULE",
    "admits_lower",
    "eval_score_lower",
    "lower_bound",
    "lower_bound_at_least",
    "selection_alpha",
    "selection_z",
    "z_for",
]

# The gate's family-wise error: at k = 1 the bound is the 95% interval's lower end.
ALPHA = Fraction(1, 20)
# The gate as reports state it, from the constant it spends.
LOWER_BOUND_RULE = (
    "eval_score_lower is the lowest lower end, over every graded split of every suite on "
    "the record, of the two-sided (1 - alpha_k) Wilson interval, "
    f"alpha_k = {float(ALPHA)} / (k (k + 1)), k being the holdout-revealing evals the "
    "agent's org ran on that suite (never reset); a mandate with min_eval_score_lower "
    "admits the agent only when eval_score_lower reaches that minimum"
)


def selection_alpha(k: int) -> Fraction:
    """alpha_k = ALPHA / (k (k + 1)): what the k-th revealing eval may spend."""
    if k < 1:
        raise ValueError("k counts evals: at least 1")
    return ALPHA / (k * (k + 1))


def selection_z(k: int) -> Fraction:
    """z of the two-sided (1 - alpha_k) interval, rounded *up* to 4 places (a wider
    interval: the bound only errs low)."""
    return z_for(selection_alpha(k))


def z_for(alpha: Fraction) -> Fraction:
    """z of a two-sided (1 - alpha) interval, rounded up to 4 places."""
    z = NormalDist().inv_cdf(1 - float(alpha) / 2)
    return Fraction(math.ceil(z * 10_000 - 1e-9), 10_000)


def lower_bound_at_least(
    x: Fraction, n: int, k: int, threshold: Fraction, *, z: Fraction | None = None
) -> bool:
    """Whether the Wilson lower bound of (x, n) at `selection_z(k)` (or at `z`) is >=
    threshold, decided exactly (rational arithmetic on squared quantities: no rounding
    can flip it)."""
    if n <= 0:
        return False
    z = selection_z(k) if z is None else z
    z2 = z * z
    p = x / n
    # lower = (p + z²/2n - z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n) >= t
    #   <=>  a >= z·sqrt(b), with a = p + z²/2n - t(1 + z²/n), b = p(1-p)/n + z²/4n²
    a = p + z2 / (2 * n) - threshold * (1 + z2 / n)
    b = p * (1 - p) / n + z2 / (4 * n * n)
    return a >= 0 and a * a >= z2 * b


def lower_bound(x: Fraction, n: int, k: int) -> Decimal:
    """The Wilson lower bound of (x, n) at `selection_z(k)`, rounded down to 4 places."""
    if n <= 0:
        raise ValueError("a bound needs at least one case")
    # The largest t on the 4-place grid the exact test admits: a bisection over
    # integers, so the shown number and the decision cannot disagree.
    low, high = 0, 10_000
    while low < high:
        middle = (low + high + 1) // 2
        if lower_bound_at_least(x, n, k, Fraction(middle, 10_000)):
            low = middle
        else:
            high = middle - 1
    return (Decimal(low) / 10_000).quantize(Decimal("0.0001"), rounding=ROUND_FLOOR)


def _splits(record: AgentRecord) -> list[tuple[str, Fraction, int]]:
    out = []
    for suite_id, graded in sorted(record.suites.items()):
        for split in (graded.public, graded.holdout):
            if split is not None and split.total:
                # The record writes x exactly when whole, else to 4 places: read as written.
                out.append((suite_id, Fraction(split.passed), split.total))
    return out


def eval_score_lower(
    record: AgentRecord, revealed: Mapping[str, int]
) -> tuple[Decimal | None, dict[str, int]]:
    """The record's score as evidence: the lowest bound over every graded split, each at
    its suite's k (`revealed`: every org's holdout-revealing evals per suite, at least 1).
    None when the record has no eval_score (an unverified capability)."""
    ks = {suite_id: max(1, int(revealed.get(suite_id, 0))) for suite_id in record.suites}
    if record.eval_score is None:
        return None, ks
    bounds = [lower_bound(x, n, ks[suite_id]) for suite_id, x, n in _splits(record)]
    return (min(bounds) if bounds else None), ks


def admits_lower(record: AgentRecord, revealed: Mapping[str, int], minimum: Decimal) -> bool:
    """Whether every graded split's bound is >= `minimum`, exactly."""
    if record.eval_score is None:
        return False
    threshold = Fraction(minimum)
    splits = _splits(record)
    return bool(splits) and all(
        lower_bound_at_least(x, n, max(1, int(revealed.get(suite_id, 0))), threshold)
        for suite_id, x, n in splits
    )
