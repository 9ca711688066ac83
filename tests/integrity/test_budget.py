"""The exposure budget, instance sets that end, and records that follow registrations."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from evals import make_plan, start, work
from evals.suites import install_suite
from records import Store, utc_text, utcnow
from schema.errors import Refused
from tests._threads import in_threads
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import GENERATED_YAML, manifest, suite_dir
from tests.evals.suites._make import SUITE_YAML


def _install(store: Store, root: Path, suite_yaml: str = SUITE_YAML) -> None:
    install_suite(store, suite_dir(root / "suite-src", suite_yaml=suite_yaml))


def _register(store: Store, agent_id: str = AGENT_ID, version: str = "1.0.0") -> None:
    store.agents.register({**manifest(version), "id": agent_id})


def _eval(store: Store, home: Path, agent_id: str = AGENT_ID) -> tuple[str, Any]:
    plan = make_plan(store, agent_id, home=home, concurrency=4)
    info = work(store, plan, start(store, plan), home=home)
    assert info.status == "done"
    return info.id, plan


def _evaluated(store: Store, root: Path, times: int, suite_yaml: str = SUITE_YAML) -> Path:
    """The suite installed, the agent registered and evaluated `times` times: their home."""
    _install(store, root, suite_yaml)
    _register(store)
    home = root / "home"
    for _ in range(times):
        _eval(store, home)
    return home


def test_the_fourth_eval_of_an_org_runs_the_public_split_only(store: Store, tmp_path: Path) -> None:
    _install(store, tmp_path)
    _register(store)
    home = tmp_path / "home"
    for _ in range(3):
        _, plan = _eval(store, home)
        assert plan.full and plan.suites[0].holdout
    assert store.evals.current_record(AGENT_ID) is not None
    plan = make_plan(store, AGENT_ID, home=home)
    (planned,) = plan.suites
    assert planned.holdout == () and planned.withheld is not None
    assert not plan.full  # narrowed: scores and reports, writes no record
    assert plan.to_json()["suites"][0]["cases"]["holdout"] == 0
    message = planned.withheld.message()
    assert "test has had 3 of its 3 holdout-revealing evals on tiny" in message
    assert "never renews by time" in message  # a stored holdout file
    assert "holon suites exposure-reset tiny --org test --reason TEXT" in message
    assert "epoch" not in message  # an author may read it; epochs are the operator's
    eval_id = work(store, plan, start(store, plan), home=home).id
    assert store.evals.get(eval_id).result["record"]["eval_id"] == eval_id
    # Its view is no verdict: the public rate and why, no eval_score, no threshold met.
    view = store.evals.get(eval_id).to_json()
    assert view["record"] is None and view["meets_thresholds"] is None
    assert view["verdict_withheld"].startswith("public cases only: test has had 3 of its 3")
    assert set(view["public_rates"]["tiny"]) == {"passed", "total", "rate", "ci95"}
    assert "eval_score" not in json.dumps(view, default=str)
    no_record = store.evals.current_record(AGENT_ID)
    assert no_record is not None and no_record.eval_id != eval_id  # no record written
    assert {c.split for c in store.evals.cells(eval_id)} == {"public"}
    (entry,) = store.exposure.list(suite_id="tiny")
    assert (entry.org, entry.spent, entry.revealed) == ("test", 3, 3)


def test_the_budget_is_the_orgs_across_every_name_and_version(store: Store, tmp_path: Path) -> None:
    _install(store, tmp_path)
    home = tmp_path / "home"
    for index in range(3):
        name = f"test/alias-{index}"
        _register(store, name, version=f"1.0.{index}")
        _eval(store, home, name)
    _register(store, "test/fresh-name", version="9.9.9")
    assert make_plan(store, "test/fresh-name", home=home).suites[0].withheld is not None
    # Another org has its own budget.
    _register(store, "other/agent")
    assert make_plan(store, "other/agent", home=home).suites[0].withheld is None


def test_a_reset_gives_the_budget_back_and_is_kept(store: Store, tmp_path: Path) -> None:
    home = _evaluated(store, tmp_path, 3)
    (reset,) = store.exposure.reset(
        org="test", suite_id="tiny", reset_by="cli:ops", reason="new agent line"
    )
    assert (reset.spent_before, reset.reset_by, reset.reason) == (3, "cli:ops", "new agent line")
    assert store.exposure.resets(suite_id="tiny") == [reset]
    _, plan = _eval(store, home)
    assert plan.full
    # A reset forgives the budget, not the evidence: the gate's k counts all four.
    assert store.exposure.revealed(["tiny"]) == {"tiny": 4}
    (entry,) = store.exposure.list(suite_id="tiny")
    assert (entry.spent, entry.revealed) == (1, 4)


def race_to_start(store: Store, plans: list[Any], refusal: str) -> list[str]:
    """Start two planned evals at the same moment: how each ended, sorted."""
    outcomes: list[str] = []

    def begin(plan: Any) -> None:
        try:
            start(store, plan)
            outcomes.append("started")
        except Refused as error:
            assert refusal in str(error)
            # An author may read this refusal (an eval queued on registration):
            # it names neither the epoch nor the instance set.
            assert "epoch" not in str(error) and plan.suites[0].instance_set[:12] not in str(error)
            assert "stored holdout" not in str(error)
            outcomes.append("refused")

    assert in_threads(begin, plans, at_once=True) == []
    return sorted(outcomes)


def test_the_last_unit_goes_to_exactly_one_of_two_evals_started_at_once(
    store: Store, tmp_path: Path
) -> None:
    home = _evaluated(store, tmp_path, 2)
    plans = [make_plan(store, AGENT_ID, home=home) for _ in range(2)]
    assert all(p.full for p in plans)  # each was planned with one unit left
    assert race_to_start(store, plans, "was spent since the eval was planned") == [
        "refused",
        "started",
    ]
    assert store.exposure.list(suite_id="tiny")[0].spent == 3
    # The refused eval wrote nothing: one running eval, not two.
    assert len(store.evals.running()) == 1


def test_a_generated_holdout_gets_new_instances_weekly_and_a_new_budget(
    store: Store, tmp_path: Path
) -> None:
    home = _evaluated(store, tmp_path, 3, GENERATED_YAML)
    plan = make_plan(store, AGENT_ID, home=home)
    withheld = plan.suites[0].withheld
    assert withheld is not None and withheld.renews_at is not None
    installed = store.suites.get("tiny")
    assert withheld.renews_at == installed.epoch_started_at + timedelta(days=7)
    assert "new instances come at" in withheld.message()
    # Six days on, still the same epoch; eight days on, a new one.
    assert store.suites.rotate_if_due("tiny", 1, 7, now=utcnow() + timedelta(days=6)) == installed
    later = store.suites.rotate_if_due("tiny", 1, 7, now=utcnow() + timedelta(days=8))
    assert later.holdout_epoch == installed.holdout_epoch + 1
    plan = make_plan(store, AGENT_ID, home=home)
    assert plan.full and plan.suites[0].holdout and plan.suites[0].epoch == later.holdout_epoch


def _by_count(after_evals: int, min_hours: int | None = None) -> str:
    floor = "" if min_hours is None else f"    rotate_min_hours: {min_hours}\n"
    return GENERATED_YAML.replace(
        "    count: 4\n", f"    count: 4\n    rotate_after_evals: {after_evals}\n{floor}"
    )


def test_rotation_by_count_waits_for_its_floor_of_time(store: Store, tmp_path: Path) -> None:
    """`rotate_after_evals: 1` alone would give an org a fresh budget after every eval;
    an epoch ends by count no sooner than `rotate_min_hours` (default 24) after it began."""
    _install(store, tmp_path, _by_count(1))
    _register(store)
    home = tmp_path / "home"
    epoch = store.suites.get("tiny").holdout_epoch
    for _ in range(3):  # each eval reaches the count, none reaches the floor
        _eval(store, home)
    installed = store.suites.get("tiny")
    assert installed.holdout_epoch == epoch and installed.evals_in_epoch == 3
    plan = make_plan(store, AGENT_ID, home=home)
    assert plan.suites[0].withheld is not None  # the budget holds: public cases only
    message = plan.suites[0].withheld.message()
    floor = utc_text(store.suites.get("tiny").epoch_started_at + timedelta(hours=24))
    assert f"or after 1 more evals of the suite, no sooner than {floor}" in message
    # A day on, the count ends the epoch at the next plan (its time alone would not: 7 days).
    started = installed.epoch_started_at
    early = store.suites.rotate_if_due(
        "tiny", 1, 7, after_evals=1, min_hours=24, now=started + timedelta(hours=23)
    )
    assert early.holdout_epoch == epoch
    later = store.suites.rotate_if_due(
        "tiny", 1, 7, after_evals=1, min_hours=24, now=started + timedelta(hours=25)
    )
    assert later.holdout_epoch == epoch + 1
    assert make_plan(store, AGENT_ID, home=home).suites[0].holdout


def test_a_suite_that_rotates_fast_is_installed_with_a_warning(tmp_path: Path) -> None:
    from tests.gateway._cli import CLI

    cli = CLI(tmp_path / "home")
    fast = suite_dir(tmp_path / "fast", suite_yaml=_by_count(3))
    added = cli("suites", "add", str(fast))
    assert added.code == 0
    # 3 reveals an epoch, an epoch every 24 hours at the most: 21 a week, over 7.
    assert "may reveal its holdout up to 21.0 times a week" in added.stderr
    (warning,) = cli("suites", "add", str(fast), "--json").json()["warnings"]
    assert (warning["code"], warning["reveals_per_week"], warning["limit"]) == (
        "fast_rotation",
        "21.0",
        7,
    )
    slow = suite_dir(
        tmp_path / "slow",
        suite_yaml=_by_count(3, min_hours=72).replace("\nversion: 1\n", "\nversion: 2\n"),
    )
    quiet = cli("suites", "add", str(slow), "--json")
    assert quiet.code == 0 and quiet.json()["warnings"] == []  # 3 x 168/72 = 7.0


def test_a_stored_holdout_is_one_instance_set_whatever_the_version(
    store: Store, tmp_path: Path
) -> None:
    """Bumping a suite's version while keeping its holdout file renews nothing."""
    home = _evaluated(store, tmp_path, 3)
    bumped = SUITE_YAML.replace("\nversion: 1\n", "\nversion: 2\n").replace(
        "threshold: 0.8", "threshold: 0.7"
    )
    install_suite(store, suite_dir(tmp_path / "v2", suite_yaml=bumped), activate=True)
    plan = make_plan(store, AGENT_ID, home=home)
    assert plan.suites[0].suite.version == 2 and plan.suites[0].withheld is not None


def test_a_suite_sets_its_budget(store: Store, tmp_path: Path) -> None:
    generous = SUITE_YAML.replace(
        'limits: {max_cost_usd: "0.01", timeout_s: 5}',
        'limits: {max_cost_usd: "0.01", timeout_s: 5, holdout_evals_per_epoch: 1}',
    )
    _install(store, tmp_path, generous)
    _register(store)
    home = tmp_path / "home"
    _eval(store, home)
    assert make_plan(store, AGENT_ID, home=home).suites[0].withheld is not None


def test_a_reregistered_old_version_has_no_record_until_evaluated(
    store: Store, tmp_path: Path
) -> None:
    _install(store, tmp_path)
    home = tmp_path / "home"
    _register(store, version="1.0.0")
    first, _ = _eval(store, home)
    _register(store, version="2.0.0")
    second, _ = _eval(store, home)
    assert store.evals.current_record(AGENT_ID, "2.0.0").eval_id == second  # type: ignore[union-attr]
    assert store.agents.register(manifest("1.0.0")).status == "reactivated"
    # Its old record describes an agent that was since replaced: it does not come back.
    assert store.evals.current_record(AGENT_ID, "1.0.0") is None
    assert store.evals.current_record_with_staleness(AGENT_ID, "1.0.0") is None
    third, _ = _eval(store, home)
    assert store.evals.current_record(AGENT_ID, "1.0.0").eval_id == third  # type: ignore[union-attr]
    # Registering the same current version again changes nothing.
    assert store.agents.register(manifest("1.0.0")).status == "unchanged"
    assert store.evals.current_record(AGENT_ID, "1.0.0").eval_id == third  # type: ignore[union-attr]
    assert first != third


@pytest.mark.parametrize("split", ["public", None])
def test_progress_by_split(store: Store, tmp_path: Path, split: str | None) -> None:
    _install(store, tmp_path)
    _register(store)
    eval_id, plan = _eval(store, tmp_path / "home")
    counts = store.evals.counts(eval_id, split=split)
    public = len(plan.suites[0].public)
    everything = public + len(plan.suites[0].holdout)
    assert counts["done"] == (public if split else everything)
    assert store.evals.progress(eval_id, split=split)["done"] == counts["done"]
