"""Adaptive attacks on the holdout, simulated offline under the product's release rules.

The figures in docs/integrity.md come from here (`python -m tests.integrity.report`
prints them). Seeded: every run of a test sees the same holdouts and answers.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from tests.integrity.sim import STRATEGIES, TRUTH, attack, false_overfit_rate

SEEDS = range(16)


@pytest.mark.parametrize("kind", ["fixed", "generated"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_no_attack_gets_past_truth_plus_five_points(kind: str, strategy: str) -> None:
    """Up to 200 adaptive submissions in one epoch: the budget reveals 3 holdout counts,
    and no strategy turns 3 counts of a 150-case holdout into more than 5 points on
    average. (The best of three draws is luck an author keeps: one seed in three gets
    past +0.05 by it alone, none past +0.10; the lower-bound gate is what pays for it.)"""
    inflations = []
    for seed in SEEDS:
        run = attack(strategy, kind=kind, submissions=200, seed=seed)  # type: ignore[arg-type]
        assert run.submitted == 200 and run.revealed == 3 and run.narrowed == 197
        assert run.inflation <= 0.10, (strategy, kind, seed, run.best)
        inflations.append(run.inflation)
    assert sum(inflations) / len(inflations) <= 0.05, (strategy, kind, inflations)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_without_the_budget_the_same_attacks_succeed(strategy: str) -> None:
    """The simulation can fail: with no budget (200 revealing evals) the attacks the issue
    measured inflate the record far past 5 points (probing reads 198 labels outright)."""
    run = attack(strategy, kind="fixed", submissions=200, limit=1000, seed=1)  # type: ignore[arg-type]
    assert run.revealed == 200
    assert run.inflation > 0.1, (strategy, run.best)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_lower_bound_gate_never_admits_a_no_skill_agent(strategy: str) -> None:
    """Even with new instances every few submissions (200 submissions over 67 epochs, so
    the budget renews and best-of-k selection works), a mandate asking a lower bound above
    the agent's true accuracy admits none of its records: k counts every revealing eval."""
    for seed in SEEDS:
        run = attack(strategy, kind="generated", submissions=200, epochs=67, seed=seed)  # type: ignore[arg-type]
        assert run.revealed == 200
        threshold = Decimal(str(round(run.truth + 0.01, 2)))
        assert not run.gate_admits(threshold), (strategy, seed, run.best, run.best_lower())


def test_renewing_epochs_let_selection_inflate_the_point_score() -> None:
    """What the budget alone cannot stop: honest re-evaluation over many epochs, keeping
    the best. The point score inflates; the lower bound (k = 200) does not."""
    run = attack("best_of_k", kind="generated", submissions=200, epochs=67, seed=3)
    assert run.inflation > 0.08
    assert run.best_lower() < Decimal(str(run.truth))


def test_the_gate_admits_a_skilled_agent() -> None:
    """The gate is not a wall: an agent right on 90% of 150 cases, evaluated once, passes
    a lower bound of 0.8 (its Wilson 95% lower bound is 0.8415)."""
    from evals._evidence import admits_lower

    record = {
        "eval_score": 0.9,
        "suites": {"s": {"holdout": {"passed": 135, "total": 150, "rate": 0.9}}},
    }
    assert admits_lower(record, {"s": 1}, Decimal("0.8"))
    assert not admits_lower(record, {"s": 1}, Decimal("0.85"))
    # The same result after 200 revealing evals proves less: 0.8 is no longer reached.
    assert not admits_lower(record, {"s": 200}, Decimal("0.8"))


def test_honest_agents_rarely_get_an_overfit_warning() -> None:
    """The overfit rule is unchanged: honest agents (same skill on both splits, clustered
    case difficulty, correlated repetitions) get a false `warn` at most 2.5% of the time."""
    for public_n, holdout_n, repetitions in ((36, 60, 1), (50, 60, 3), (30, 30, 5)):
        rate = false_overfit_rate(
            trials=400, public_n=public_n, holdout_n=holdout_n, repetitions=repetitions, seed=11
        )
        assert rate <= Fraction(25, 1000), (public_n, holdout_n, repetitions, float(rate))


def test_the_no_skill_agent_is_what_the_issue_measured() -> None:
    assert TRUTH == 0.535
