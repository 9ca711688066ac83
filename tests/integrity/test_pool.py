"""A stored holdout as a pool (docs/integrity.md, "Instance sets that end"): disjoint subsets
by a secret permutation, one an epoch, each its own instance set with budgets of its own;
public-only once used up; the same subset whenever a plan is rebuilt."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from evals import make_plan, start, work
from evals._integrity import instance_set
from evals._plan import rebuild
from evals.suites import Suite, epoch_holdout, install_suite, load_suite, suite_digests
from records import Store
from schema.errors import SuiteError
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import manifest, suite_dir
from tests.evals.suites._make import SUITE_YAML, case, make_suite

SECRET = b"\x07" * 32
FILE = "holdout: {file: cases/holdout.jsonl}\n"


def pool_yaml(subset: int, extra: str = "", suite_id: str = "tiny") -> str:
    """The tiny suite with its holdout file a pool of subsets of `subset`."""
    assert FILE in SUITE_YAML
    text = SUITE_YAML.replace(
        FILE, f"holdout: {{file: cases/holdout.jsonl, pool: {{subset: {subset}{extra}}}}}\n"
    )
    return text.replace("id: tiny\n", f"id: {suite_id}\n")


# Subjects no author may ever read (the echo agent answers each with its subject).
POOL = [case(f"poolcase{i:02d}", f"poolsubject{i:02d}", f"poolsubject{i:02d}") for i in range(11)]


def _suite(root: Path, subset: int = 3, *, suite_id: str = "tiny", cases: int = 11) -> Suite:
    return load_suite(
        make_suite(root, suite_yaml=pool_yaml(subset, suite_id=suite_id), holdout=POOL[:cases])
    )


def _ids(cases: Any) -> list[str]:
    return [c.id for c in cases]


# -- the cut --------------------------------------------------------------------------------


def test_subsets_are_disjoint_whole_and_cover_the_pool(tmp_path: Path) -> None:
    suite = _suite(tmp_path)  # 11 cases in subsets of 3: three epochs, two cases unused
    assert suite.holdout_pool is not None and suite.holdout_pool.epochs == 3
    assert suite.holdout_count == 3
    subsets = [epoch_holdout(suite, SECRET, epoch) for epoch in range(3)]
    assert all(len(s) == 3 for s in subsets)
    seen = [c.id for s in subsets for c in s]
    assert len(seen) == len(set(seen)) == 9  # disjoint
    assert set(seen) <= {c["id"] for c in POOL}
    # Past the last whole subset, nothing: the pool is used up.
    assert epoch_holdout(suite, SECRET, 3) == () and epoch_holdout(suite, SECRET, 40) == ()
    assert epoch_holdout(suite, SECRET, -1) == ()
    # A subset keeps the file's order: the cells' order tells nothing of the secret ranks.
    order = [c.id for c in suite.holdout_file or ()]
    for subset in subsets:
        assert _ids(subset) == sorted(_ids(subset), key=order.index)


def test_a_pool_of_whole_subsets_is_covered_exactly(tmp_path: Path) -> None:
    suite = _suite(tmp_path, 3, cases=9)
    seen = {c.id for epoch in range(3) for c in epoch_holdout(suite, SECRET, epoch)}
    assert seen == {c["id"] for c in POOL[:9]}


def test_the_cut_is_the_secrets_and_the_suites(tmp_path: Path) -> None:
    suite = _suite(tmp_path / "a")
    cut = [_ids(epoch_holdout(suite, SECRET, e)) for e in range(3)]
    # The same secret and suite always cut the same subsets (a resume, a re-grade).
    assert cut == [_ids(epoch_holdout(_suite(tmp_path / "b"), SECRET, e)) for e in range(3)]
    # Another secret, or another suite id over the same file, cuts others.
    others = [b"\x08" * 32, b"\x09" * 32, b"\x0a" * 32]
    assert any(
        [_ids(epoch_holdout(suite, secret, e)) for e in range(3)] != cut for secret in others
    )
    renamed = _suite(tmp_path / "c", suite_id="other")
    assert [_ids(epoch_holdout(renamed, SECRET, e)) for e in range(3)] != cut


def test_the_cut_is_a_uniform_one(tmp_path: Path) -> None:
    """Over many secrets each case lands in each subset about equally often: no case is
    more likely than another to be in the first epoch's subset."""
    suite = _suite(tmp_path, 3, cases=9)
    first: dict[str, int] = {}
    for n in range(900):
        for c in epoch_holdout(suite, n.to_bytes(32, "big"), 0):
            first[c.id] = first.get(c.id, 0) + 1
    assert set(first) == {c["id"] for c in POOL[:9]}
    assert all(240 <= count <= 360 for count in first.values())  # 300 expected


def test_each_subset_is_its_own_instance_set(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    keys = [instance_set(suite, epoch, SECRET) for epoch in range(3)]
    assert len({key for key, _ in keys}) == 3
    assert [label.split()[:3] for _, label in keys] == [["pool", "epoch", str(e)] for e in range(3)]
    # Named by its cases, as a stored file is: a pool of one subset is the file whole.
    whole = _suite(tmp_path / "whole", 11)
    plain = load_suite(make_suite(tmp_path / "plain", holdout=POOL))
    assert instance_set(whole, 0, SECRET)[0] == instance_set(plain, 0, SECRET)[0]


def test_the_subset_size_is_data_and_rotation_is_not(tmp_path: Path) -> None:
    """The suite digest (and so the plan digest) covers the subset size: it decides which
    cases an epoch grades. Without a pool the digest is a stored file's as it always was."""
    three = suite_digests(_suite(tmp_path / "three", 3))
    four = suite_digests(_suite(tmp_path / "four", 4))
    assert three.dataset != four.dataset and three.suite != four.suite
    slow = load_suite(
        make_suite(
            tmp_path / "slow", suite_yaml=pool_yaml(3, ", rotate_after_days: 30"), holdout=POOL
        )
    )
    assert suite_digests(slow).suite == three.suite
    plain = load_suite(make_suite(tmp_path / "plain", holdout=POOL))
    assert suite_digests(plain).dataset != three.dataset


# -- bad settings -------------------------------------------------------------------------


def test_a_subset_larger_than_the_pool_is_refused_where_it_stands(tmp_path: Path) -> None:
    directory = make_suite(tmp_path, suite_yaml=pool_yaml(12), holdout=POOL)
    with pytest.raises(SuiteError) as caught:
        load_suite(directory)
    error = caught.value
    assert "a pool of 11 holdout cases holds no subset of 12" in str(error)
    assert "at most 11 cases" in str(error)
    location = error.location
    assert location is not None and location.path == "$.holdout.pool.subset"
    assert (location.file or "").endswith("suite.yaml") and location.line == 13
    assert "poolcase" not in str(error) and "poolsubject" not in str(error)


@pytest.mark.parametrize(
    ("holdout", "path"),
    [
        ("{file: cases/holdout.jsonl, pool: {subset: 0}}", "$.holdout"),
        ("{file: cases/holdout.jsonl, pool: {subset: 5001}}", "$.holdout"),
        ("{file: cases/holdout.jsonl, pool: {subset: 2.5}}", "$.holdout"),
        ("{file: cases/holdout.jsonl, pool: {}}", "$.holdout"),
        ("{file: cases/holdout.jsonl, pool: {subset: 3, every: 2}}", "$.holdout"),
        ("{file: cases/holdout.jsonl, pool: {subset: 3, rotate_min_hours: 0}}", "$.holdout"),
        ("{file: cases/holdout.jsonl, pool: 3}", "$.holdout"),
    ],
)
def test_bad_pool_settings_are_refused(tmp_path: Path, holdout: str, path: str) -> None:
    text = SUITE_YAML.replace(FILE, f"holdout: {holdout}\n")
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite(tmp_path, suite_yaml=text, holdout=POOL))
    location = caught.value.location
    assert location is not None and (location.path or "").startswith(path)
    assert location.line == 13


def test_a_pool_belongs_to_a_stored_holdout_only(tmp_path: Path) -> None:
    generated = SUITE_YAML.replace(
        FILE,
        "fixtures:\n  ticket: {generator: ticket, params: {}}\n"
        "holdout:\n  generate:\n    count: 4\n    case: {input: {$fixture: ticket}, "
        "expected: {$truth: ticket}}\n  pool: {subset: 2}\n",
    )
    with pytest.raises(SuiteError):
        load_suite(make_suite(tmp_path / "g", suite_yaml=generated, holdout=POOL))
    public = SUITE_YAML.replace(
        "public: {file: cases/public.jsonl}",
        "public: {file: cases/public.jsonl, pool: {subset: 1}}",
    )
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite(tmp_path / "p", suite_yaml=public, holdout=POOL))
    assert caught.value.location is not None and caught.value.location.path == "$.public.pool"
    assert "unknown key 'pool'" in str(caught.value)


# -- epochs of a real store ----------------------------------------------------------------


def _install(store: Store, root: Path, text: str | None = None, holdout: Any = POOL) -> None:
    install_suite(
        store, suite_dir(root / "suite-src", suite_yaml=text or pool_yaml(3), holdout=holdout)
    )


def _agent(store: Store, org: str = "test") -> str:
    agent_id = AGENT_ID if org == "test" else f"{org}/agent"
    store.agents.register({**manifest("1.0.0"), "id": agent_id})
    return agent_id


def _eval(store: Store, home: Path, agent_id: str = AGENT_ID) -> Any:
    plan = make_plan(store, agent_id, home=home, concurrency=4)
    info = work(store, plan, start(store, plan), home=home)
    assert info.status == "done"
    return plan


def test_an_orgs_budget_renews_with_each_epoch_on_cases_it_never_saw(
    store: Store, tmp_path: Path
) -> None:
    _install(store, tmp_path)
    _agent(store)
    home = tmp_path / "home"
    graded: list[set[str]] = []
    for epoch in range(3):
        cases: set[str] = set()
        for _ in range(3):
            plan = _eval(store, home)
            (planned,) = plan.suites
            assert plan.full and planned.epoch == epoch and len(planned.holdout) == 3
            cases |= set(_ids(planned.holdout))
        assert len(cases) == 3  # one subset the whole epoch
        graded.append(cases)
        # The org's fourth eval of the epoch is public-only, until new instances come.
        withheld = make_plan(store, AGENT_ID, home=home).suites[0].withheld
        assert withheld is not None and withheld.reason == "holdout_budget_spent"
        if epoch < 2:
            assert withheld.renews_at is not None  # the pool has a next subset
            assert "holon suites exposure-reset tiny" in withheld.message()
        else:
            # Its last subset: nothing renews it by time, a new holdout file does.
            assert withheld.renews_at is None and "new holdout file" in withheld.message()
        store.suites.rotate_holdout("tiny")
    assert not graded[0] & graded[1] and not graded[1] & graded[2] and not graded[0] & graded[2]
    sets = store.exposure.instance_sets("tiny")
    assert sorted(s.revealed for s in sets) == [3, 3, 3]
    # The gate's k keeps every epoch's reveals: selection across epochs is selection.
    assert store.exposure.revealed(["tiny"]) == {"tiny": 9}
    record = store.evals.current_record_with_staleness(AGENT_ID, "1.0.0", holdout_evals=True)
    assert record is not None and record.holdout_evals == {"tiny": 9}


def test_the_instance_sets_budget_renews_with_each_epoch(store: Store, tmp_path: Path) -> None:
    _install(store, tmp_path)
    home = tmp_path / "home"
    for org in ("one", "two"):
        agent_id = _agent(store, org)
        for _ in range(3):
            assert _eval(store, home, agent_id).suites[0].holdout
    fresh = _agent(store, "fresh")
    withheld = make_plan(store, fresh, home=home).suites[0].withheld
    assert withheld is not None and withheld.reason == "holdout_instances_exposed"
    assert "holon suites rotate-holdout tiny" in withheld.message()
    store.suites.rotate_holdout("tiny")
    assert _eval(store, home, fresh).full


def test_epochs_rotate_by_the_pools_own_settings(sqlite_store: Store, tmp_path: Path) -> None:
    """The pool rotates as a generated holdout does: by time (`rotate_after_days`), and by
    count no sooner than `rotate_min_hours`."""
    from records._models import SuiteVersionRow

    store = sqlite_store
    _install(store, tmp_path, pool_yaml(3, ", rotate_after_days: 2, rotate_after_evals: 1"))
    _agent(store)
    home = tmp_path / "home"
    first = _eval(store, home).suites[0]
    # One eval reached the count, but the epoch is younger than its 24-hour floor.
    assert make_plan(store, AGENT_ID, home=home).suites[0].epoch == first.epoch == 0

    def age(hours: int) -> None:
        with store.write() as session:
            row = session.get(SuiteVersionRow, ("tiny", 1))
            assert row is not None and row.epoch_started_at is not None
            row.epoch_started_at -= timedelta(hours=hours)

    age(25)
    second = make_plan(store, AGENT_ID, home=home).suites[0]
    assert second.epoch == 1 and not set(_ids(second.holdout)) & set(_ids(first.holdout))
    age(49)  # by time alone: two days
    assert make_plan(store, AGENT_ID, home=home).suites[0].epoch == 2


def test_a_used_up_pool_runs_the_public_split_with_the_reason(store: Store, tmp_path: Path) -> None:
    _install(store, tmp_path)
    _agent(store)
    home = tmp_path / "home"
    _eval(store, home)
    record = store.evals.current_record(AGENT_ID)
    for _ in range(3):
        store.suites.rotate_holdout("tiny")
    plan = make_plan(store, AGENT_ID, home=home)
    (planned,) = plan.suites
    assert planned.epoch == 3 and planned.holdout == () and not plan.full
    withheld = planned.withheld
    assert withheld is not None and withheld.renews_at is None
    shown = withheld.to_json()
    assert shown["reason"] == "holdout_pool_exhausted" and (shown["spent"], shown["limit"]) == (
        3,
        3,
    )
    message = withheld.message()
    assert "tiny's holdout pool is used up: its 11 cases held 3 disjoint subsets of 3" in message
    assert "new holdout file (new cases) as a new suite version" in message
    assert "holon suites add DIR --activate" in message
    assert "epoch" not in message and "poolcase" not in message  # an author reads it
    assert plan.to_json()["suites"][0]["holdout_withheld"]["reason"] == "holdout_pool_exhausted"
    eval_id = work(store, plan, start(store, plan), home=home).id
    assert {c.split for c in store.evals.cells(eval_id)} == {"public"}
    view = store.evals.get(eval_id).to_json()
    assert view["record"] is None
    assert view["verdict_withheld"].startswith("public cases only: tiny's holdout pool is used up")
    assert store.evals.current_record(AGENT_ID) == record  # no record written
    # A new file as a new suite version is a new pool: new instance sets, budgets, epochs.
    fresh = [case(f"fresh{i}", f"freshsubject{i}", f"freshsubject{i}") for i in range(6)]
    text = pool_yaml(3).replace("\nversion: 1\n", "\nversion: 2\n")
    install_suite(store, suite_dir(tmp_path / "v2", suite_yaml=text, holdout=fresh), activate=True)
    again = make_plan(store, AGENT_ID, home=home)
    assert again.full and set(_ids(again.suites[0].holdout)) <= {c["id"] for c in fresh}


def test_a_resumed_eval_grades_the_subset_it_was_planned_with(store: Store, tmp_path: Path) -> None:
    """Plans pin the epoch: rebuilt after the pool moved on, the plan is the same subset and
    the same digest."""
    _install(store, tmp_path)
    _agent(store)
    home = tmp_path / "home"
    plan = make_plan(store, AGENT_ID, home=home, concurrency=4)
    info = start(store, plan)
    store.suites.rotate_holdout("tiny")
    moved = make_plan(store, AGENT_ID, home=home)
    assert moved.digest != plan.digest and moved.suites[0].epoch == 1
    again = rebuild(store, store.evals.get(info.id).plan, home=home)
    assert again.digest == plan.digest == store.evals.get(info.id).plan_digest
    assert _ids(again.suites[0].holdout) == _ids(plan.suites[0].holdout)
    assert again.suites[0].instance_set == plan.suites[0].instance_set
    done = work(store, again, info, home=home)
    assert done.status == "done"
    graded = {c.case_id for c in store.evals.cells(info.id) if c.split == "holdout"}
    assert graded == set(_ids(plan.suites[0].holdout))
    # Planned twice at one epoch, one digest; the digest hashes the epoch, not the clock.
    assert make_plan(store, AGENT_ID, home=home).digest == moved.digest


def test_an_imported_report_is_checked_against_its_own_subset(
    sqlite_store: Store, tmp_path: Path
) -> None:
    from evals import import_report
    from evals.reports import build_report, render_json

    store = sqlite_store
    _install(store, tmp_path)
    _agent(store)
    home = tmp_path / "home"
    eval_id = work(
        store, plan := make_plan(store, AGENT_ID, home=home), start(store, plan), home=home
    ).id
    report = render_json(build_report(store, eval_id, audience="operator")).encode()
    # The pool has moved on since: the report's pinned epoch still names its subset.
    store.suites.rotate_holdout("tiny")
    info = import_report(store, report, home=home)
    (checked,) = info.origin["checked"] if info.origin else [{}]
    assert checked["cases"].endswith("holdout cases match the installed suite")


def test_an_authors_report_tells_nothing_of_any_subset(sqlite_store: Store, tmp_path: Path) -> None:
    """The pool's cases, the epoch and the instance set's label stay the operator's: an
    author's report of a pool eval (every format) is its rate and interval alone."""
    from evals.reports import build_report, render_html, render_json, render_markdown

    store = sqlite_store
    _install(store, tmp_path)
    _agent(store)
    store.suites.rotate_holdout("tiny")
    home = tmp_path / "home"
    plan = make_plan(store, AGENT_ID, home=home)
    eval_id = work(store, plan, start(store, plan), home=home).id
    graded = set(_ids(plan.suites[0].holdout))
    secrets = {c["id"] for c in POOL} | {c["input"]["subject"] for c in POOL}
    operator = render_json(build_report(store, eval_id, audience="operator"))
    assert sum(case_id in operator for case_id in graded) == 3  # so the test can fail
    author = build_report(store, eval_id, audience="author")
    for render in (render_json, render_markdown, render_html):
        text = render(author)
        assert not {s for s in secrets if s in text}, render
        assert "epoch" not in text.lower() and "pool" not in text.lower(), render
        assert plan.suites[0].instance_label not in text, render
    holdout = author["suites"][0]["splits"]["holdout"]
    assert (holdout["cases"], holdout["n"]) == (3, 3)


def test_a_pool_that_rotates_fast_is_installed_with_the_warning(tmp_path: Path) -> None:
    """The fast-rotation warning reads a pool's rotation as it reads a generated holdout's."""
    from evals import rotation_warning

    fast = _suite_with(tmp_path / "fast", ", rotate_after_evals: 3")
    warning = rotation_warning(fast)
    assert warning is not None and warning["reveals_per_week"] == "21.0"
    assert rotation_warning(_suite_with(tmp_path / "slow", "")) is None  # 3 a week


def _suite_with(root: Path, extra: str) -> Suite:
    return load_suite(make_suite(root, suite_yaml=pool_yaml(3, extra), holdout=POOL))


def test_a_report_that_claims_another_epoch_is_refused(sqlite_store: Store, tmp_path: Path) -> None:
    """An imported report's epoch names the subset it graded: changed alone, the plan digest
    does not recompute; changed with its digests made to agree, its holdout cases are not
    that epoch's subset."""
    from evals import import_report
    from evals._import import report_plan_digest
    from evals.reports import build_report, render_json
    from schema.errors import InputError
    from schema.jsontext import dumps, loads

    store = sqlite_store
    _install(store, tmp_path)
    _agent(store)
    home = tmp_path / "home"
    plan = make_plan(store, AGENT_ID, home=home)
    eval_id = work(store, plan, start(store, plan), home=home).id
    report = loads(render_json(build_report(store, eval_id, audience="operator")))
    assert isinstance(report, dict) and report["suites"][0]["holdout_epoch"] == 0
    report["suites"][0]["holdout_epoch"] = 1
    with pytest.raises(InputError, match="the plan digest does not recompute"):
        import_report(store, dumps(report).encode(), home=home)
    report["record"]["value"]["holdout_epochs"] = {"tiny": 1}
    report["eval"]["plan_digest"] = report_plan_digest(report)
    with pytest.raises(InputError, match="the holdout cases do not match") as caught:
        import_report(store, dumps(report).encode(), home=home)
    assert caught.value.location is not None
    assert (caught.value.location.path or "").startswith("$.suites[0].cases")


def test_a_new_version_that_keeps_the_pool_keeps_its_subsets_and_their_budgets(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """The ranks are the secret's and the ids': a version bump (a threshold changed) starts
    again at the first subset, whose instance set keeps what it spent."""
    store = sqlite_store
    _install(store, tmp_path)
    _agent(store)
    home = tmp_path / "home"
    first = [_eval(store, home).suites[0] for _ in range(3)][0]
    store.suites.rotate_holdout("tiny")
    bumped = (
        pool_yaml(3)
        .replace("\nversion: 1\n", "\nversion: 2\n")
        .replace("threshold: 0.8", "threshold: 0.7")
    )
    install_suite(store, suite_dir(tmp_path / "v2", suite_yaml=bumped, holdout=POOL), activate=True)
    planned = make_plan(store, AGENT_ID, home=home).suites[0]
    assert planned.suite.version == 2 and planned.epoch == 0
    assert planned.instance_set == first.instance_set  # the same cases: the same set
    assert planned.withheld is not None and planned.withheld.reason == "holdout_budget_spent"
    store.suites.rotate_holdout("tiny")
    again = make_plan(store, AGENT_ID, home=home).suites[0]
    assert again.withheld is None and not set(_ids(again.holdout)) & set(_ids(first.holdout))


def test_suites_add_warns_of_a_pool_that_recuts_cases_already_shown(tmp_path: Path) -> None:
    """A new version that keeps the pool as it was is quiet; one that changes its subset
    size, adds cases to it, or makes a file used whole a pool is installed with a warning
    (`pool_recut`): its subsets overlap holdouts whose rates were shown."""
    from tests.gateway._cli import CLI

    cli = CLI(tmp_path / "home")

    def add(version: int, text: str, holdout: list[Any]) -> Any:
        text = text.replace("\nversion: 1\n", f"\nversion: {version}\n")
        directory = make_suite(tmp_path / f"v{version}", suite_yaml=text, holdout=holdout)
        added = cli("suites", "add", str(directory), "--json")
        assert added.code == 0, added.stderr
        return added.json()["warnings"]

    assert add(1, pool_yaml(3), POOL) == []
    kept = pool_yaml(3).replace("threshold: 0.8", "threshold: 0.7")
    assert add(2, kept, POOL) == []  # the same file, the same subsets
    (recut,) = add(3, pool_yaml(4), POOL)
    assert (recut["code"], recut["shared_cases"]) == ("pool_recut", 11)
    assert "a pool changes only by a new file of new cases" in recut["message"]
    grown = [*POOL, case("poolcase99", "poolsubject99", "poolsubject99")]
    assert add(4, pool_yaml(4), grown)[0]["code"] == "pool_recut"
    fresh = [case(f"fresh{i}", f"freshsubject{i}", f"freshsubject{i}") for i in range(6)]
    assert add(5, pool_yaml(3), fresh) == []  # new cases: nothing shown is recut
    human = cli(
        "suites",
        "add",
        str(
            make_suite(
                tmp_path / "v6",
                suite_yaml=pool_yaml(2).replace("\nversion: 1\n", "\nversion: 6\n"),
                holdout=POOL,
            )
        ),
    )
    assert human.code == 0 and "were in version" in human.stderr


def test_a_file_used_whole_then_as_a_pool_is_a_recut(tmp_path: Path) -> None:
    from evals import recut_warning

    whole = load_suite(make_suite(tmp_path / "whole", holdout=POOL))
    pooled = _suite_with(tmp_path / "pooled", "")
    bumped = load_suite(
        make_suite(
            tmp_path / "bumped",
            suite_yaml=pool_yaml(3).replace("\nversion: 1\n", "\nversion: 2\n"),
            holdout=POOL,
        )
    )
    assert recut_warning(whole, [pooled]) is None  # not a pool: nothing is cut
    warning = recut_warning(bumped, [whole])
    assert warning is not None and warning["version"] == 1
    assert recut_warning(bumped, [pooled]) is None
