"""The drift test (evals/_drift.py): its error bound, its delays, its two paths agree.

Honest agents (pass rate exactly the reference, the worst case the bound
covers) are simulated over 100,000 canaries each; agents that collapse or
slide are found within the delays docs/integrity.md states. Every random
choice is seeded.
"""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals._drift import (
    ALPHA,
    KEEP,
    RESTART_EVERY,
    DriftState,
    drift_reference,
    first_drift,
    log_threshold,
    simulated_failures,
)

HORIZON = 100_000


def _honest_false_drifts(reference: str, agents: int, seed: int, horizon: int = HORIZON) -> int:
    r = Decimal(reference)
    return sum(
        first_drift(r, simulated_failures(float(r), horizon, random.Random(seed + k)), horizon)
        is not None
        for k in range(agents)
    )


def _delay(reference: str, before: float, after: float, good: int, seed: int) -> int:
    """Canaries after the change until drift is decided (the change after `good`)."""
    rng = random.Random(seed)
    state = DriftState.against(Decimal(reference)).observe_all(
        rng.random() < before for _ in range(good)
    )
    assert state.drift is None
    for taken in range(1, 20_000):
        state = state.observe(rng.random() < after)
        if state.drift is not None:
            return taken
    raise AssertionError("no drift decided in 20,000 canaries")


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from(["0", "0.5", "0.7", "0.85", "0.95", "0.99", "1"]),
    st.floats(0, 1),
    st.integers(1, 1_500),
    st.integers(0, 2**32),
)
def test_the_fast_path_decides_as_observe_does(
    reference: str, truth: float, horizon: int, seed: int
) -> None:
    rng = random.Random(seed)
    outcomes = [rng.random() < truth for _ in range(horizon)]
    state = DriftState.against(Decimal(reference)).observe_all(outcomes)
    failures = [i + 1 for i, passed in enumerate(outcomes) if not passed]
    assert first_drift(Decimal(reference), failures, horizon) == state.drift
    assert (state.graded, state.passed) == (horizon, sum(outcomes))


def test_honest_agents_are_not_found_drifting() -> None:
    # At the reference itself (H0's boundary): 30 agents x 10,000 canaries here,
    # 300 x 100,000 in the slow tier.
    assert _honest_false_drifts("0.85", 30, seed=1, horizon=10_000) == 0
    assert _honest_false_drifts("0.6", 10, seed=2, horizon=10_000) == 0


@pytest.mark.slow
def test_false_drift_stays_within_its_bound_over_300_agents() -> None:
    # The bound is Ville's inequality: ALPHA (0.5%) at any horizon. Observed here
    # (seeded): 1 of 300 agents over 100,000 canaries each; the goal is at most 1%.
    assert ALPHA == 0.005
    assert _honest_false_drifts("0.85", 300, seed=1000) <= 3


def test_an_agent_better_than_its_reference_never_drifts() -> None:
    r = Decimal("0.7")
    for k in range(2):
        failures = simulated_failures(0.8, HORIZON, random.Random(k))
        assert first_drift(r, failures, HORIZON) is None


def test_a_collapse_is_found_within_a_few_canaries() -> None:
    # Every answer wrong, certified at 0.85: fresh, and after 20,000 good canaries.
    assert max(_delay("0.85", 0.85, 0.0, 0, seed) for seed in range(10)) <= 6
    assert max(_delay("0.85", 0.85, 0.0, 20_000, seed) for seed in range(10)) <= 15


def test_a_slide_from_085_to_065_is_found() -> None:
    delays = sorted(_delay("0.85", 0.85, 0.65, 20_000, seed) for seed in range(20))
    assert delays[-1] <= 1_000, delays


def test_no_credit_is_banked_by_a_long_good_run() -> None:
    # After 100,000 good canaries the threshold has grown by 2 ln j, not by the
    # credit: a collapse still shows within a handful.
    failures = list(simulated_failures(0.85, HORIZON, random.Random(7)))
    collapse = [HORIZON + k for k in range(1, 40)]
    drift = first_drift(Decimal("0.85"), failures + collapse, HORIZON + 40)
    assert drift is not None and drift.graded - HORIZON <= 20
    assert drift.since >= HORIZON - KEEP * RESTART_EVERY


def test_nothing_certified_never_drifts_and_a_perfect_record_drifts_on_failures() -> None:
    assert DriftState.against(Decimal(0)).observe_all([False] * 500).drift is None
    perfect = DriftState.against(Decimal(1)).observe_all([True] * 100 + [False] * 3)
    assert perfect.drift is not None and perfect.drift.graded <= 103


def test_a_decided_drift_stays_decided_and_counts_go_on() -> None:
    state = DriftState.against(Decimal("0.85")).observe_all([False] * 10)
    assert state.drift is not None
    evidence = state.drift
    later = state.observe_all([True] * 1000)
    assert later.drift == evidence
    assert (later.graded, later.passed) == (1010, 1000)
    assert later.to_json()["drift"]["log_wealth"] >= later.to_json()["drift"]["log_threshold"]


def test_thresholds_spend_alpha_over_every_test() -> None:
    import math

    spent = sum(math.exp(-log_threshold(j)) for j in range(1, 200_000))
    assert spent < ALPHA
    assert ALPHA - spent < ALPHA * 1e-4


@pytest.mark.parametrize("reference", ["-0.1", "1.01"])
def test_a_reference_outside_0_1_is_refused(reference: str) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        DriftState.against(Decimal(reference))


@pytest.mark.parametrize(("passed", "total"), [(34, 40), (170, 200), (10, 12), (0, 5), (7, 7)])
def test_the_reference_is_the_holdout_rates_lower_bound_at_z_2576(passed: int, total: int) -> None:
    import math

    p, z = passed / total, 2.576
    centre = (p + z * z / (2 * total)) / (1 + z * z / total)
    half = z / (1 + z * z / total) * math.sqrt(p * (1 - p) / total + z * z / (4 * total**2))
    expected = max(0.0, centre - half)
    reference = drift_reference(passed, total)
    assert float(reference) <= expected < float(reference) + 0.0001
    assert reference <= Decimal(passed) / total


def test_a_state_reads_back_from_its_json() -> None:
    import json

    state = DriftState.against(Decimal("0.8")).observe_all([True] * 120 + [False] * 30)
    assert state.drift is not None
    again = DriftState.from_json(json.loads(json.dumps(state.to_json())))
    assert again == state
    assert again.observe(False) == state.observe(False)
