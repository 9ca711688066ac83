"""The drift test: has an agent's canary pass rate fallen below what was certified?

Canaries are cases the gateway sends an agent inside its live traffic and
grades as eval cells (pass or fail). After each graded canary, this test
asks whether the agent's current pass rate μ is below the reference r it was
certified at (H0: μ ≥ r), and decides *drift* the first time the evidence
says so. It may run forever, so its error must hold however long it runs:
for an agent whose pass rate stays at least r, the probability that drift is
ever decided is at most `ALPHA`, at any horizon.

The test is a betting e-process (Waudby-Smith and Ramdas, "Estimating means
of bounded random variables by betting", JRSS-B 2024; Shafer and Vovk's
testing by betting). A bettor stakes a fraction λ of its wealth on "this
canary fails": a canary that fails multiplies the wealth by (1 + λr), one
that passes by (1 − λ(1 − r)). Under H0 the expected factor is
1 − λ(μ − r) ≤ 1, so the wealth is a non-negative supermartingale, and by
Ville's inequality it ever reaches 1/α with probability at most α. Several
stakes are bet at once and averaged (`STAKES`: a mixture is still a
supermartingale), so the test adapts to a collapse (every answer wrong) and
to a slide (0.85 to 0.65) alike.

One bet from the record's eval onwards would let an agent bank credit: after
months of good answers the wealth is so small that a later collapse takes
as long again to show. So a fresh test starts every `RESTART_EVERY`
canaries and the newest `KEEP` run side by side; the j-th test started
decides at 1/α_j with α_j = α·6/(π²j²), and Σ α_j = α: the bound holds for
all of them together, forever. A drift is then judged on at most
`RESTART_EVERY × KEEP` canaries of the past, and the price of starting late
is a threshold that grows with log j (about 2 ln j), not with the credit.

Only counts are kept: a test's wealth depends on the passes and fails since
it started, so the state is the totals and, per running test, the failures
counted when it started. Wealth is computed in logarithms (floats): the
decision compares it with a threshold and nothing else reads it.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from decimal import ROUND_FLOOR, Decimal
from fractions import Fraction
from typing import Any

from evals._stats import rounded, wilson

__all__ = [
    "ALPHA",
    "KEEP",
    "RESTART_EVERY",
    "STAKES",
    "DriftEvidence",
    "DriftState",
    "Z_REFERENCE",
    "drift_reference",
    "first_drift",
    "live_score",
    "log_threshold",
    "simulated_failures",
]

ALPHA = 0.005
# The reference is the certified holdout rate's lower bound at this z (one-sided
# 99.5%): an unchanged agent is below it only when its eval flattered it by more
# than that, about 0.5% of the time; with ALPHA, at most about 1% in all.
Z_REFERENCE = Decimal("2.576")
RESTART_EVERY = 50
KEEP = 8
# Each stake as a fraction c of the largest safe one (λ = c / (1 − r): a pass
# then leaves at least 1 − c of the wealth). 0.95 bets almost all on a
# collapse; the smallest ones pay off on a slide of a few points.
STAKES = (0.95, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625, 0.0078125)
# A reference of 1 would make every stake "safe" and unbounded: bet as if
# r were at most this (a fail is still strong evidence against μ = 1).
_MAX_REFERENCE = 0.99


def live_score(passed: int, graded: int) -> dict[str, Any]:
    """Canaries' pass rate as a record shows it: the counts, the rate and its Wilson 95%
    interval (rounded for display; null before the first canary)."""
    if graded == 0:
        return {"graded": 0, "passed": 0, "score": None, "ci95": None}
    low, high = wilson(passed, graded)
    return {
        "graded": graded,
        "passed": passed,
        "score": rounded(Fraction(passed, graded)),
        "ci95": [rounded(low), rounded(high)],
    }


def drift_reference(passed: Decimal | Fraction | int, total: int) -> Decimal:
    """What a record's holdout split (x passed of n cases) certifies canaries against:
    the lower end of its Wilson interval at `Z_REFERENCE`, to 4 places, rounded down."""
    low, _ = wilson(Fraction(passed), total, Z_REFERENCE)
    return low.quantize(Decimal("0.0001"), rounding=ROUND_FLOOR)


@dataclass(frozen=True)
class DriftEvidence:
    """What decided drift: the test that crossed its threshold, in numbers."""

    graded: int  # canaries graded when it was decided
    passed: int
    reference: Decimal
    test: int  # the j-th test started (1-based)
    since: int  # canaries graded before that test started
    test_graded: int
    test_passed: int
    log_wealth: float
    log_threshold: float

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DriftEvidence:
        return cls(
            int(data["graded"]),
            int(data["passed"]),
            Decimal(str(data["reference"])),
            int(data["test"]),
            int(data["since"]),
            int(data["test_graded"]),
            int(data["test_passed"]),
            float(data["log_wealth"]),
            float(data["log_threshold"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "graded": self.graded,
            "passed": self.passed,
            "reference": str(self.reference),
            "test": self.test,
            "since": self.since,
            "test_graded": self.test_graded,
            "test_passed": self.test_passed,
            "log_wealth": self.log_wealth,
            "log_threshold": self.log_threshold,
        }


@dataclass(frozen=True)
class DriftState:
    """The test's state for one agent, capability and record (`against`, then `observe`).

    `marks`: per running test, oldest first, (its 1-based number, the
    failures counted when it started); it started at canary number
    (number − 1) × RESTART_EVERY.
    """

    reference: Decimal
    graded: int = 0
    failed: int = 0
    marks: tuple[tuple[int, int], ...] = ((1, 0),)
    drift: DriftEvidence | None = None

    @property
    def passed(self) -> int:
        return self.graded - self.failed

    @classmethod
    def against(cls, reference: Decimal) -> DriftState:
        """A fresh test against `reference`, the pass rate certified (0 to 1)."""
        if not Decimal(0) <= reference <= Decimal(1):
            raise ValueError(f"a reference rate is between 0 and 1, not {reference}")
        return cls(reference)

    def observe(self, passed: bool) -> DriftState:
        """The state after one more graded canary. A decided drift stays decided."""
        graded = self.graded + 1
        failed = self.failed + (not passed)
        if self.drift is not None:
            return replace(self, graded=graded, failed=failed)
        drift = None
        if not passed and self.reference > 0:  # wealth rises only on a failure
            drift = _decide(self.reference, graded, failed, self.marks)
        marks = self.marks
        if graded % RESTART_EVERY == 0:
            marks = (*marks, (graded // RESTART_EVERY + 1, failed))[-KEEP:]
        return DriftState(self.reference, graded, failed, marks, drift)

    def observe_all(self, outcomes: Iterable[bool]) -> DriftState:
        state = self
        for passed in outcomes:
            state = state.observe(passed)
        return state

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DriftState:
        """The state `to_json` wrote (records keep it as JSON and never read it)."""
        drift = data.get("drift")
        return cls(
            Decimal(str(data["reference"])),
            int(data["graded"]),
            int(data["failed"]),
            tuple((int(test), int(failed)) for test, failed in data["marks"]),
            None if drift is None else DriftEvidence.from_json(drift),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "reference": str(self.reference),
            "graded": self.graded,
            "failed": self.failed,
            "marks": [list(m) for m in self.marks],
            "drift": None if self.drift is None else self.drift.to_json(),
        }


@functools.lru_cache(maxsize=256)
def _stakes(reference: float) -> tuple[tuple[float, float], ...]:
    """Per stake: log of a failure's factor and of a pass's."""
    r = min(reference, _MAX_REFERENCE)
    return tuple((math.log1p(c / (1 - r) * r), math.log1p(-c / (1 - r) * (1 - r))) for c in STAKES)


def _log_wealth(reference: float, passes: int, fails: int) -> float:
    """log of the mixture's wealth after `passes` and `fails` (every stake equally)."""
    logs = [fails * fail + passes * ok for fail, ok in _stakes(reference)]
    top = max(logs)
    return top + math.log(sum(math.exp(v - top) for v in logs) / len(logs))


def log_threshold(test: int) -> float:
    """log(1/α_j) for the j-th test: α_j = α·6/(π²j²), which sum to α over every j."""
    return math.log(math.pi**2 * test**2 / (6 * ALPHA))


def first_drift(reference: Decimal, failures: Iterable[int], horizon: int) -> DriftEvidence | None:
    """What `DriftState.observe` decides over `horizon` canaries of which those numbered
    `failures` (1-based, increasing) fail and the rest pass, in time proportional to
    the failures: the drift test's simulations run on this, 10^5 canaries an agent."""
    if reference <= 0:
        return None
    marks: list[tuple[int, int]] = [(1, 0)]
    failed = 0
    for number in failures:
        if number > horizon:
            break
        # The tests started since the last failure (after canaries number − 1 or before).
        first = max(marks[-1][0], (number - 1) // RESTART_EVERY + 1 - KEEP)
        for test in range(first + 1, (number - 1) // RESTART_EVERY + 2):
            marks.append((test, failed))
        del marks[:-KEEP]
        failed += 1
        drift = _decide(reference, number, failed, tuple(marks))
        if drift is not None:
            return drift
        if number % RESTART_EVERY == 0:
            marks.append((number // RESTART_EVERY + 1, failed))
    return None


def simulated_failures(truth: float, horizon: int, rng: random.Random) -> Iterator[int]:
    """The numbers of the failing canaries of an agent passing each with probability
    `truth`, independently (geometric gaps between failures)."""
    if truth >= 1:
        return
    number = 0
    log_truth = math.log(truth) if truth > 0 else None
    while True:
        gap = 0 if log_truth is None else int(math.log(1.0 - rng.random()) / log_truth)
        number += gap + 1
        if number > horizon:
            return
        yield number


def _failures_needed(reference: float, test: int) -> tuple[int, ...]:
    """Per span n (0 to KEEP × RESTART_EVERY canaries): the fewest failures among n
    that bring the j-th test's wealth to its threshold (n + 1: none do).

    The wealth grows with the failures among a given number of canaries and
    shrinks with each pass, so the least count never falls as n grows: one
    walk up both finds every entry. Thresholds grow with j, so the table of
    test j − 1, when at hand, is where the walk starts.
    """
    key = (reference, test)
    table = _TABLES.get(key)
    if table is not None:
        return table
    floor = _TABLES.get((reference, test - 1))
    threshold = log_threshold(test)
    needed: list[int] = []
    fails = 0
    for n in range(KEEP * RESTART_EVERY + 1):
        if floor is not None:
            fails = max(fails, floor[n])
        while fails <= n and _log_wealth(reference, n - fails, fails) < threshold:
            fails += 1
        needed.append(fails)
    if len(_TABLES) >= _MAX_TABLES:
        _TABLES.pop(next(iter(_TABLES)))  # the oldest: tables are made in test order
    _TABLES[key] = table = tuple(needed)
    return table


# (reference, test) -> _failures_needed's table; 4,096 of them are about 13 MB.
_TABLES: dict[tuple[float, int], tuple[int, ...]] = {}
_MAX_TABLES = 4096


def _decide(
    reference: Decimal, graded: int, failed: int, marks: tuple[tuple[int, int], ...]
) -> DriftEvidence | None:
    r = float(reference)
    for test, failed_before in marks:
        since = (test - 1) * RESTART_EVERY
        fails = failed - failed_before
        span = graded - since
        if fails >= _failures_needed(r, test)[span]:
            return DriftEvidence(
                graded,
                graded - failed,
                reference,
                test,
                since,
                span,
                span - fails,
                _log_wealth(r, span - fails, fails),
                log_threshold(test),
            )
    return None
