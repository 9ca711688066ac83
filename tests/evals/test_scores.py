"""Scores (docs/evals.md): splits, suites, the eval score, its deciding split, the record JSON."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

import pytest

from evals._overfit import SuiteSplits, overfit_verdicts
from evals._scores import SuiteCounts, score_eval, score_suites, split_score
from evals._stats import wilson
from schema.jsontext import dumps, loads

Cases = list[tuple[int, int]]


def cases(passed: int, total: int, runs: int = 1) -> Cases:
    """`total` cases, the first `passed` passing every run, the rest failing every run."""
    return [(runs, runs)] * passed + [(0, runs)] * (total - passed)


def suite(
    suite_id: str,
    public: Sequence[tuple[int, int]],
    holdout: Sequence[tuple[int, int]],
    *,
    capability: str | None = None,
    threshold: str = "0.8",
    version: int = 1,
) -> SuiteCounts:
    return SuiteCounts(
        suite_id=suite_id,
        version=version,
        capability=capability or f"cap/{suite_id}",
        threshold=Decimal(threshold),
        public=public,
        holdout=holdout,
    )


def test_split_score_counts_cases_not_runs() -> None:
    split = split_score([(3, 3), (1, 2), (0, 3), (2, 2)])
    assert split is not None
    assert split.n == 4
    assert split.x == Fraction(5, 2)
    assert split.rate == Fraction(5, 8)
    assert split.ci95 == wilson(Fraction(5, 2), 4)
    assert split.stability is not None
    assert split.stability == Decimal("0.125")  # SDs 0, 0.5, 0, 0
    body = split.to_json()
    assert body["passed"] == Decimal("2.5000") and body["total"] == 4
    assert body["rate"] == Decimal("0.6250") and body["stability"] == Decimal("0.1250")


def test_split_score_single_runs() -> None:
    split = split_score(cases(47, 50))
    assert split is not None
    assert split.stability is None
    assert split.to_json() == {
        "passed": 47,
        "total": 50,
        "rate": Decimal("0.9400"),
        "ci95": [Decimal("0.8378"), Decimal("0.9794")],
    }
    assert split_score([]) is None


@pytest.mark.parametrize("bad", [(3, 2), (-1, 2), (0, 0), (True, 1), (1, 1.0)])
def test_split_score_rejects_bad_counts(bad: tuple[int, int]) -> None:
    with pytest.raises(ValueError):
        split_score([(1, 1), bad])


def test_record_example_of_evals_md() -> None:
    result = score_eval(
        ["invoice-extract"],
        [
            suite(
                "invoice-extract",
                cases(47, 50),
                cases(43, 50),
                capability="invoice-extract",
                threshold="0.85",
                version=3,
            )
        ],
    )
    assert result.eval_score == Fraction(43, 50)
    assert result.weakest_suite == "invoice-extract"
    assert result.weakest_split == "holdout"
    assert result.eval_score_ci95 == wilson(43, 50)
    body = loads(dumps(result.to_json()))
    assert body["eval_score"] == Decimal("0.86")
    assert body["eval_score_ci95"] == [Decimal("0.7381"), Decimal("0.9305")]
    assert body["weakest_suite"] == "invoice-extract"
    assert body["unverified_capabilities"] == [] and body["warnings"] == []
    entry = body["suites"]["invoice-extract"]
    assert entry["version"] == 3 and entry["score"] == Decimal("0.86")
    assert entry["meets_threshold"] is True and entry["threshold"] == Decimal("0.85")
    assert entry["public"] == {
        "passed": 47,
        "total": 50,
        "rate": Decimal("0.94"),
        "ci95": [Decimal("0.8378"), Decimal("0.9794")],
    }
    assert entry["holdout"]["passed"] == 43 and entry["holdout"]["rate"] == Decimal("0.86")
    overfit = entry["overfit"]
    assert overfit["verdict"] == "none"
    assert overfit["gap"] == Decimal("0.08")
    assert round(overfit["p_value"], 3) == Decimal("0.159")


def test_suite_score_is_the_lower_split() -> None:
    scores = score_suites(
        [
            suite("pub-low", cases(15, 20), cases(18, 20)),
            suite("hold-low", cases(18, 20), cases(15, 20)),
        ]
    )
    assert scores["pub-low"].score == Fraction(3, 4)
    assert scores["hold-low"].score == Fraction(3, 4)
    assert not scores["pub-low"].meets_threshold


def test_suite_with_an_empty_split_uses_the_other() -> None:
    scores = score_suites(
        [
            suite("no-holdout", cases(9, 10), []),
            suite("no-public", [], cases(7, 10)),
            suite("nothing", [], []),
        ]
    )
    assert scores["no-holdout"].score == Fraction(9, 10)
    assert scores["no-holdout"].holdout is None
    assert scores["no-holdout"].to_json()["holdout"] is None
    assert scores["no-public"].score == Fraction(7, 10)
    assert scores["nothing"].score is None
    assert scores["nothing"].meets_threshold is False
    assert scores["nothing"].to_json()["score"] is None
    assert {s.overfit.verdict for s in scores.values()} == {"none"}


def test_threshold_is_exact() -> None:
    # 17/20 = 0.85 exactly: meets 0.85, misses a hair more.
    at = score_suites([suite("s", cases(17, 20), [], threshold="0.85")])["s"]
    above = score_suites([suite("s", cases(17, 20), [], threshold="0.8500000000001")])["s"]
    assert at.meets_threshold and not above.meets_threshold


def test_eval_score_is_the_weakest_suite() -> None:
    result = score_eval(
        ["cap/a", "cap/b"],
        [suite("a", cases(18, 20), cases(17, 20)), suite("b", cases(16, 20), cases(19, 20))],
    )
    assert result.eval_score == Fraction(4, 5)
    assert (result.weakest_suite, result.weakest_split) == ("b", "public")
    assert result.eval_score_ci95 == wilson(16, 20)
    assert result.unverified_capabilities == ()


def test_unverified_capability_makes_eval_score_null() -> None:
    result = score_eval(
        ["cap/z", "cap/a", "cap/m"],
        [suite("a", cases(18, 20), cases(17, 20))],
    )
    assert result.eval_score is None
    assert result.eval_score_ci95 is None and result.weakest_suite is None
    assert result.unverified_capabilities == ("cap/m", "cap/z")
    assert result.suites["a"].score == Fraction(17, 20)  # still scored and shown
    body = result.to_json()
    assert body["eval_score"] is None and body["eval_score_ci95"] is None
    assert body["unverified_capabilities"] == ["cap/m", "cap/z"]


def test_a_suite_without_cases_verifies_nothing() -> None:
    result = score_eval(["cap/a", "cap/b"], [suite("a", cases(9, 10), []), suite("b", [], [])])
    assert result.eval_score is None
    assert result.unverified_capabilities == ("cap/b",)


def test_no_claims() -> None:
    result = score_eval([], [])
    assert result.eval_score is None and result.unverified_capabilities == ()


def test_ties_smaller_n_then_holdout_then_suite_id() -> None:
    # Equal rates 0.8: 8/10 (smaller n, wider interval) decides over 16/20.
    result = score_eval(
        ["cap/a", "cap/b"], [suite("a", cases(16, 20), []), suite("b", cases(8, 10), [])]
    )
    assert (result.weakest_suite, result.eval_score_ci95) == ("b", wilson(8, 10))
    # Same rate and n in both splits: the holdout decides.
    same = score_eval(["cap/a"], [suite("a", cases(8, 10), cases(8, 10))])
    assert same.weakest_split == "holdout"
    # Same everything: the first suite id.
    twins = score_eval(
        ["cap/b", "cap/a"], [suite("b", cases(8, 10), []), suite("a", cases(8, 10), [])]
    )
    assert twins.weakest_suite == "a"


def test_overfit_warning_lands_in_warnings() -> None:
    result = score_eval(
        ["cap/a", "cap/b"],
        [suite("a", cases(18, 20), cases(10, 20)), suite("b", cases(18, 20), cases(17, 20))],
    )
    assert result.suites["a"].overfit.verdict == "warn"
    assert result.suites["a"].overfit.tests == 2  # Holm across both suites
    assert result.suites["b"].overfit.verdict == "none"
    [warning] = result.warnings()
    assert warning["code"] == "overfit" and warning["suite"] == "a"
    assert "gap 40.0%" in warning["detail"]
    assert result.to_json()["warnings"] == [warning]


def test_overfit_uses_case_scores_and_suite_delta() -> None:
    # 5 runs per case: public 18 cases always pass, 2 never; holdout 12 pass, 8 never.
    counts = SuiteCounts(
        suite_id="s",
        version=1,
        capability="cap/s",
        threshold=Decimal("0.5"),
        public=cases(18, 20, runs=5),
        holdout=cases(12, 20, runs=5),
        overfit_delta=Decimal("0.3"),
    )
    scored = score_suites([counts])["s"]
    # Counting cases: 18/20 vs 12/20, gap exactly the suite's δ, Fisher p = 0.032.
    assert scored.overfit.verdict == "inconclusive"
    assert scored.overfit.gap == Fraction(3, 10) == scored.overfit.delta
    assert scored.public is not None and scored.public.stability == 0
    # Counting runs as if independent (90/100 vs 60/100) would have warned.
    runs = SuiteSplits("s", Fraction(90), 100, Fraction(60), 100, Decimal("0.3"))
    assert overfit_verdicts([runs])["s"].verdict == "warn"


def test_bad_suite_sets() -> None:
    with pytest.raises(ValueError, match="not claimed"):
        score_eval(["cap/a"], [suite("b", cases(1, 1), [])])
    with pytest.raises(ValueError, match="two suites"):
        score_eval(
            ["cap/a"],
            [suite("a", cases(1, 1), []), suite("b", cases(1, 1), [], capability="cap/a")],
        )
    with pytest.raises(ValueError, match="repeat"):
        score_suites([suite("a", cases(1, 1), []), suite("a", cases(1, 1), [])])
