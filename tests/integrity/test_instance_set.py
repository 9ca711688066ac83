"""Exposure is the holdout's: every org's holdout-revealing evals of an instance set count,
for its budget and for the lower-bound gate's k (docs/integrity.md)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from evals import make_plan, start, work
from evals._evidence import eval_score_lower
from records import Store
from tests.evals.reports._setup import GENERATED_YAML, manifest
from tests.evals.suites._make import SUITE_YAML
from tests.integrity.test_budget import _install, race_to_start

LIMITS = 'limits: {max_cost_usd: "0.01", timeout_s: 5}'


def _limits(yaml: str, per_set: int) -> str:
    assert LIMITS in yaml
    return yaml.replace(LIMITS, LIMITS[:-1] + f", holdout_evals_per_instance_set: {per_set}}}")


def _agent(store: Store, org: str) -> str:
    agent_id = f"{org}/agent"
    store.agents.register({**manifest("1.0.0"), "id": agent_id})
    return agent_id


def _eval(store: Store, home: Path, agent_id: str) -> Any:
    plan = make_plan(store, agent_id, home=home, concurrency=4)
    assert work(store, plan, start(store, plan), home=home).status == "done"
    return plan


def _two_orgs_reveal_six(store: Store, home: Path) -> None:
    for org in ("one", "two"):
        agent_id = _agent(store, org)
        for _ in range(3):
            assert _eval(store, home, agent_id).suites[0].holdout  # each revealed
    assert store.exposure.revealed(["tiny"]) == {"tiny": 6}


def test_after_six_reveals_by_two_orgs_a_third_orgs_first_eval_is_public_only(
    store: Store, tmp_path: Path
) -> None:
    """The default: an instance set revealed 6 times, by any orgs, is exposed for every
    org, a fresh one included (its own budget untouched)."""
    _install(store, tmp_path)
    home = tmp_path / "home"
    _two_orgs_reveal_six(store, home)
    fresh = _agent(store, "fresh")
    assert (
        store.exposure.spent(
            "fresh", "tiny", make_plan(store, fresh, home=home).suites[0].instance_set
        )
        == 0
    )
    plan = make_plan(store, fresh, home=home)
    (planned,) = plan.suites
    assert planned.holdout == () and not plan.full
    withheld = planned.withheld
    assert withheld is not None and withheld.exposed
    assert withheld.to_json()["reason"] == "holdout_instances_exposed"
    message = withheld.message()
    assert "tiny's current holdout instances had 6 of their 6" in message
    assert "every org's together" in message and "new holdout file" in message
    assert "epoch" not in message and "exposure-reset" not in message  # no reset renews it
    (exposed,) = store.exposure.instance_sets("tiny")
    assert (exposed.instance_set, exposed.revealed) == (planned.instance_set, 6)
    eval_id = work(store, plan, start(store, plan), home=home).id
    assert {c.split for c in store.evals.cells(eval_id)} == {"public"}
    assert store.evals.current_record(fresh) is None  # public-only: no record
    # An operator's reset gives an org its budget back, not the instance set's.
    store.exposure.reset(org="one", suite_id="tiny", reset_by="cli:ops", reason="why")
    assert make_plan(store, "one/agent", home=home).suites[0].withheld is not None


def test_a_third_orgs_first_record_is_judged_at_k_7(store: Store, tmp_path: Path) -> None:
    """A suite that allows more reveals per instance set: the fresh org's first record is
    judged with every earlier reveal accounted for, k = 7 (per org it would be 1)."""
    _install(store, tmp_path, _limits(SUITE_YAML, 100))
    home = tmp_path / "home"
    _two_orgs_reveal_six(store, home)
    fresh = _agent(store, "fresh")
    assert _eval(store, home, fresh).full
    record = store.evals.current_record_with_staleness(fresh, "1.0.0", holdout_evals=True)
    assert record is not None and record.holdout_evals == {"tiny": 7}
    lower, ks = eval_score_lower(record, record.holdout_evals)
    assert ks == {"tiny": 7}
    at_one, _ = eval_score_lower(record, {"tiny": 1})
    assert lower is not None and at_one is not None and lower < at_one
    # Every org's record reads the same k: it is the holdout's, not the asker's.
    first = store.evals.current_record_with_staleness("one/agent", "1.0.0", holdout_evals=True)
    assert first is not None and first.holdout_evals == {"tiny": 7}


def test_the_instance_sets_last_unit_goes_to_one_of_two_orgs_at_once(
    store: Store, tmp_path: Path
) -> None:
    _install(store, tmp_path, _limits(SUITE_YAML, 4))
    home = tmp_path / "home"
    for org in ("one", "two"):
        agent_id = _agent(store, org)
        for _ in range(2 if org == "one" else 1):
            _eval(store, home, agent_id)
    # 3 of 4: two orgs, each with budget of its own left, plan one eval each.
    plans = [make_plan(store, _agent(store, org), home=home) for org in ("three", "four")]
    assert all(p.full for p in plans)
    refusal = "revealed 4 times, by every org together"
    assert race_to_start(store, plans, refusal) == ["refused", "started"]
    assert store.exposure.revealed(["tiny"]) == {"tiny": 4}
    # The refused org spent nothing of its own budget either: one transaction.
    assert sum(e.spent for e in store.exposure.list(suite_id="tiny")) == 4


def test_new_instances_renew_the_instance_sets_budget_not_k(store: Store, tmp_path: Path) -> None:
    """A generated holdout's new epoch is a new instance set: a fresh budget for every org;
    the gate's k keeps every reveal of the suite (selection across epochs is selection)."""
    _install(store, tmp_path, _limits(GENERATED_YAML, 2))
    home = tmp_path / "home"
    for org in ("one", "two"):
        _eval(store, home, _agent(store, org))
    fresh = _agent(store, "fresh")
    withheld = make_plan(store, fresh, home=home).suites[0].withheld
    assert withheld is not None and withheld.exposed and withheld.renews_at is not None
    assert "holon suites rotate-holdout tiny" in withheld.message()
    store.suites.rotate_holdout("tiny")
    assert _eval(store, home, fresh).full
    assert store.exposure.revealed(["tiny"]) == {"tiny": 3}
    record = store.evals.current_record_with_staleness(fresh, "1.0.0", holdout_evals=True)
    assert record is not None and record.holdout_evals == {"tiny": 3}
    assert record.eval_score is not None and record.eval_score >= Decimal(0)
