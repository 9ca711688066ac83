"""Adaptive attacks on the holdout, simulated offline under the product's release rules.

The figures in docs/integrity.md come from here (`python -m tests.integrity.report`
prints them). Seeded: every run of a test sees the same holdouts and answers.
"""

from __future__ import annotations

import random
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from evals._evidence import ALPHA, lower_bound_at_least, selection_z, z_for
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


@pytest.mark.parametrize("orgs", [11, 67])
@pytest.mark.parametrize("kind", ["fixed", "generated"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_many_orgs_learn_no_more_than_the_holdout_allows(
    strategy: str, kind: str, orgs: int
) -> None:
    """An author with `orgs` org tokens, who knows the budgets: it learns from all but one
    and makes its final submission from a fresh org, keeping the instance set's last unit
    for it, so the final reveals and is judged. Every org's reveals count: 6 in all, the
    final's k is 6, the best record stays within +0.05 of the truth on average, and a
    mandate asking a lower bound its truth does not reach admits none of them."""
    inflations = []
    for seed in SEEDS:
        run = attack(strategy, kind=kind, submissions=200, orgs=orgs, seed=seed)  # type: ignore[arg-type]
        assert run.revealed == 6 and run.final is not None  # the final revealed
        assert run.record_orgs[-1] == orgs - 1 and run.k(orgs - 1) == 6
        assert len(set(run.record_orgs)) == 3  # two learning orgs had the other five
        assert run.inflation <= 0.11, (strategy, kind, seed, run.best)
        inflations.append(run.inflation)
        for minimum in (Decimal(str(round(run.truth + 0.01, 2))), Decimal("0.55")):
            assert not run.gate_admits(minimum), (strategy, seed, minimum, run.best_lower())
    assert sum(inflations) / len(inflations) <= 0.05, (strategy, kind, inflations)


@pytest.mark.parametrize("strategy", ["probe", "decode"])
def test_counted_per_org_the_many_org_attack_succeeds(strategy: str) -> None:
    """The simulation can fail: counted per org (each org's own budget, the gate's k its
    own reveals), 10 learning orgs reveal the holdout 30 times and the fresh org's final,
    judged at k = 1, is inflated past +0.10 on average and admitted by a lower bound
    above its truth."""
    runs = [
        attack(strategy, kind="fixed", submissions=200, orgs=11, counting="org", seed=seed)  # type: ignore[arg-type]
        for seed in SEEDS
    ]
    assert all(r.revealed == 31 and r.k(10) == 1 for r in runs)
    finals = [r.final_inflation for r in runs]
    assert all(f is not None for f in finals)
    assert sum(f for f in finals if f is not None) / len(finals) > 0.10, finals
    assert sum(r.gate_admits(Decimal("0.55")) for r in runs) >= 4


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_without_the_budget_the_same_attacks_succeed(strategy: str) -> None:
    """The simulation can fail: with no budgets (200 revealing evals) the attacks
    inflate the record far past 5 points (probing reads 198 labels outright)."""
    run = attack(
        strategy,  # type: ignore[arg-type]
        kind="fixed",
        submissions=200,
        limit=1000,
        instance_limit=1000,
        seed=1,
    )
    assert run.revealed == 200
    assert run.inflation > 0.1, (strategy, run.best)


@pytest.mark.slow
@pytest.mark.parametrize("orgs", [1, 11])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_lower_bound_gate_never_admits_a_no_skill_agent(strategy: str, orgs: int) -> None:
    """Even with new instances every few submissions (200 submissions over 67 epochs, so
    the budgets renew and best-of-k selection works), from one org or from eleven, a
    mandate asking a lower bound above the agent's true accuracy admits none of its
    records: k counts every revealing eval of every org."""
    for seed in SEEDS:
        run = attack(
            strategy,  # type: ignore[arg-type]
            kind="generated",
            submissions=200,
            epochs=67,
            seed=seed,
            orgs=orgs,
        )
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
    a lower bound of 0.8 (its bound at k = 1 is 0.8314)."""
    from evals._evidence import admits_lower
    from tests.records._record import agent_record

    record = agent_record(
        eval_score=0.9, suites={"s": {"holdout": {"passed": 135, "total": 150, "rate": 0.9}}}
    )
    assert admits_lower(record, {"s": 1}, Decimal("0.8"))
    assert not admits_lower(record, {"s": 1}, Decimal("0.85"))
    # The same result after 200 revealing evals proves less: 0.8 is no longer reached.
    assert not admits_lower(record, {"s": 200}, Decimal("0.8"))


def _stops_when_lucky(seed: int, threshold: Fraction, z_of: Any) -> bool:
    """An author who evaluates a coin (n = 150) until the gate admits its latest record."""
    rng = random.Random(f"stop-{seed}")
    for k in range(1, 201):
        x = sum(1 for _ in range(150) if rng.random() < 0.5)
        if lower_bound_at_least(Fraction(x), 150, k, threshold, z=z_of(k)):
            return True
    return False


@pytest.mark.slow
def test_an_author_who_stops_when_lucky_is_not_admitted() -> None:
    """The record is always the latest eval, so an author's move is to stop at the first
    lucky one. alpha_k summing to ALPHA holds against that (exactly, by the union bound
    over the binomial tails: at most 2.47% for n = 150 and 200 evals); ALPHA / k
    (Bonferroni, which pays only for keeping the best of k) does not: the simulation can
    fail. 400 authors each: 13 admitted against 51."""
    truth = Fraction(1, 2)
    ours = sum(_stops_when_lucky(s, truth, selection_z) for s in range(400))
    bonferroni = sum(_stops_when_lucky(s, truth, lambda k: z_for(ALPHA / k)) for s in range(400))
    assert ours <= 16, ours  # 4%: the exact bound is 2.47%, plus sampling noise
    assert bonferroni >= 32, bonferroni


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
