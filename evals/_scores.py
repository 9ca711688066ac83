"""Scores of an eval (docs/evals.md, "Scores"): cases, splits, suites and the eval score.

Exact throughout: a case scores passes / runs as a `Fraction`, a split's
x = Σ s_i over its n cases, its rate x / n; thresholds and δ arrive as
Decimal and are converted exactly (`Fraction(Decimal("0.15")) == 3/20`).
Only interval bounds and stability (square roots) are Decimal, and nothing is
decided on them. Rounding happens in `to_json`, for display only.

- suite score = min(public rate, holdout rate), or the one present when a
  split is empty, or None when both are;
- eval_score = the lowest suite score over the claimed capabilities. It is
  None when a claimed capability has no suite, or a suite with no cases: that
  capability is listed in `unverified_capabilities`, and `eval_score_ci95`
  and `weakest_suite` are None too (nothing decided a score).

The deciding split. eval_score equals the lowest rate among the non-empty
splits of the claimed suites. Ties are broken, in order, by the smaller n
(the less certain evidence, so the wider interval is shown), then holdout
before public (the split the author never saw), then suite id.
`eval_score_ci95` is that split's Wilson interval and `weakest_suite` its suite.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol

from evals._overfit import OverfitVerdict, SuiteSplits, overfit_verdicts
from evals._stats import rounded, stability, wilson
from evals.suites._model import DEFAULT_OVERFIT_DELTA, Split
from records import RecordSplit, RecordSuite

__all__ = [
    "THRESHOLD_RULE",
    "EvalScore",
    "SplitScore",
    "SuiteCounts",
    "SuiteScore",
    "score_eval",
    "score_suites",
    "split_score",
]

CaseCounts = tuple[int, int]  # (passes, runs) of one case

# What `meets_threshold` decides (score_suites) and `holon eval` exits by, as reports state it.
THRESHOLD_RULE = (
    "a suite passes when its score (the lower of its public and holdout rates, the case "
    "as the unit) is at least its threshold, compared exactly; the eval passes when "
    "every suite does; an incomplete eval gets no verdict"
)


class ScoredSuite(Protocol):
    """What scoring reads of a suite: a plan's (`evals.Suite`) or a report's
    (`evals.reports._data.SuiteData`), so neither is converted to the other."""

    @property
    def id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def capability(self) -> str: ...
    @property
    def threshold(self) -> Decimal: ...
    @property
    def overfit_delta(self) -> Decimal: ...


@dataclass(frozen=True)
class SplitScore:
    """One split of one suite: n cases, x = Σ passes_i / runs_i."""

    n: int
    x: Fraction
    rate: Fraction
    ci95: tuple[Decimal, Decimal]
    stability: Decimal | None  # None unless some case ran at least twice

    def to_json(self) -> dict[str, Any]:
        return self.record().to_json()

    def record(self) -> RecordSplit:
        """The split as the record grades it, rounded for display: `passed` whole when x is
        (written as an integer), else x to 4 places; `stability` if measured."""
        low, high = self.ci95
        return RecordSplit(
            passed=Decimal(int(self.x)) if self.x.denominator == 1 else rounded(self.x),
            total=self.n,
            rate=rounded(self.rate),
            ci95=(rounded(low), rounded(high)),
            stability=None if self.stability is None else rounded(self.stability),
        )


def split_score(cases: Sequence[CaseCounts]) -> SplitScore | None:
    """Score a split from its cases' (passes, runs); None for a split with no cases."""
    for case in cases:
        _check_case(case)
    if not cases:
        return None
    n = len(cases)
    x = sum((Fraction(passes, runs) for passes, runs in cases), Fraction(0))
    return SplitScore(n=n, x=x, rate=x / n, ci95=wilson(x, n), stability=stability(cases))


def _check_case(case: CaseCounts) -> None:
    passes, runs = case
    if (
        type(passes) is not int  # bool is an int, and is not a count
        or type(runs) is not int
        or runs < 1
        or not 0 <= passes <= runs
    ):
        raise ValueError(f"a case needs 0 <= passes <= runs and runs >= 1, not {case!r}")


@dataclass(frozen=True)
class SuiteCounts:
    """What an eval measured for one suite: per-case (passes, runs) in each split."""

    suite_id: str
    version: int
    capability: str
    threshold: Decimal
    public: Sequence[CaseCounts]
    holdout: Sequence[CaseCounts]
    overfit_delta: Decimal = DEFAULT_OVERFIT_DELTA

    @classmethod
    def of(cls, suite: ScoredSuite, cases: Iterable[tuple[str, int, int]]) -> SuiteCounts:
        """The counts of `suite` from each of its cases' (split, passes, runs), as the record,
        every report and a comparison take them: a case with no recorded run is missing
        from the sample, not a failure."""
        by_split: dict[str, list[CaseCounts]] = {"public": [], "holdout": []}
        for split, passes, runs in cases:
            if runs:
                by_split[split].append((passes, runs))
        return cls(
            suite.id,
            suite.version,
            suite.capability,
            suite.threshold,
            by_split["public"],
            by_split["holdout"],
            suite.overfit_delta,
        )


@dataclass(frozen=True)
class SuiteScore:
    suite_id: str
    version: int
    capability: str
    public: SplitScore | None
    holdout: SplitScore | None
    score: Fraction | None  # min of the present splits' rates; None when both are empty
    threshold: Decimal
    meets_threshold: bool  # score >= threshold, exactly; False without a score
    overfit: OverfitVerdict

    def splits(self) -> list[tuple[Split, SplitScore]]:
        """The non-empty splits, holdout first."""
        named: list[tuple[Split, SplitScore | None]] = [
            ("holdout", self.holdout),
            ("public", self.public),
        ]
        return [(name, split) for name, split in named if split is not None]

    def to_json(self) -> dict[str, Any]:
        return self.record().to_json()

    def record(self) -> RecordSuite:
        """The suite as the record grades it (`records.RecordSuite` writes its JSON), its
        numbers rounded for display."""
        return RecordSuite(
            version=self.version,
            capability=self.capability,
            score=None if self.score is None else rounded(self.score),
            threshold=self.threshold,
            meets_threshold=self.meets_threshold,
            public=None if self.public is None else self.public.record(),
            holdout=None if self.holdout is None else self.holdout.record(),
            overfit=self.overfit.record(),
        )


@dataclass(frozen=True)
class EvalScore:
    eval_score: Fraction | None
    eval_score_ci95: tuple[Decimal, Decimal] | None
    weakest_suite: str | None
    weakest_split: Split | None  # the split whose rate is eval_score
    unverified_capabilities: tuple[str, ...]  # sorted
    suites: Mapping[str, SuiteScore] = field(repr=False)  # by suite id

    def warnings(self) -> list[dict[str, str]]:
        """One `{"code": "overfit", "suite", "detail"}` per suite whose verdict is `warn`."""
        return [
            {"code": "overfit", "suite": suite_id, "detail": score.overfit.detail()}
            for suite_id, score in sorted(self.suites.items())
            if score.overfit.verdict == "warn"
        ]

    def to_json(self) -> dict[str, Any]:
        """The scored part of the agent record (docs/evals.md, "The record"); the store adds
        agent, eval and epochs."""
        ci = self.eval_score_ci95
        return {
            "eval_score": None if self.eval_score is None else rounded(self.eval_score),
            "eval_score_ci95": None if ci is None else [rounded(ci[0]), rounded(ci[1])],
            "weakest_suite": self.weakest_suite,
            "unverified_capabilities": list(self.unverified_capabilities),
            "suites": {
                suite_id: score.to_json() for suite_id, score in sorted(self.suites.items())
            },
            "warnings": self.warnings(),
        }


def score_suites(suites: Sequence[SuiteCounts]) -> dict[str, SuiteScore]:
    """Score each suite of one eval; overfit verdicts with Holm's correction across them."""
    splits = {s.suite_id: (split_score(s.public), split_score(s.holdout)) for s in suites}
    if len(splits) != len(suites):
        raise ValueError(f"suite ids repeat: {sorted(s.suite_id for s in suites)}")
    verdicts = overfit_verdicts(
        [
            SuiteSplits(
                suite_id=s.suite_id,
                public_x=_x(splits[s.suite_id][0]),
                public_n=_n(splits[s.suite_id][0]),
                holdout_x=_x(splits[s.suite_id][1]),
                holdout_n=_n(splits[s.suite_id][1]),
                delta=s.overfit_delta,
            )
            for s in suites
        ]
    )
    out: dict[str, SuiteScore] = {}
    for s in suites:
        public, holdout = splits[s.suite_id]
        rates = [split.rate for split in (public, holdout) if split is not None]
        score = min(rates) if rates else None
        out[s.suite_id] = SuiteScore(
            suite_id=s.suite_id,
            version=s.version,
            capability=s.capability,
            public=public,
            holdout=holdout,
            score=score,
            threshold=s.threshold,
            meets_threshold=score is not None and score >= Fraction(s.threshold),
            overfit=verdicts[s.suite_id],
        )
    return out


def score_eval(claimed: Sequence[str], suites: Sequence[SuiteCounts]) -> EvalScore:
    """The eval score of an agent claiming `claimed`, from the suites of those capabilities.

    Every suite must belong to a claimed capability, one suite per capability
    (the plan takes each claimed capability's active suite).
    """
    by_capability: dict[str, str] = {}
    for s in suites:
        if s.capability not in claimed:
            raise ValueError(f"suite {s.suite_id} is for {s.capability}, which is not claimed")
        if s.capability in by_capability:
            raise ValueError(
                f"capability {s.capability} has two suites: "
                f"{by_capability[s.capability]} and {s.suite_id}"
            )
        by_capability[s.capability] = s.suite_id
    scores = score_suites(suites)
    unverified = tuple(
        sorted(
            {
                capability
                for capability in claimed
                if capability not in by_capability
                or scores[by_capability[capability]].score is None
            }
        )
    )
    candidates = [
        (split.rate, split.n, name == "public", score.suite_id, name, split)
        for score in scores.values()
        for name, split in score.splits()
    ]
    if unverified or not candidates:
        return EvalScore(None, None, None, None, unverified, scores)
    rate, _, _, suite_id, name, split = min(candidates, key=lambda c: c[:4])
    return EvalScore(rate, split.ci95, suite_id, name, unverified, scores)


def _x(split: SplitScore | None) -> Fraction:
    return Fraction(0) if split is None else split.x


def _n(split: SplitScore | None) -> int:
    return 0 if split is None else split.n
