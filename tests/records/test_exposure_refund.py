"""An eval cancelled before any holdout cell of a suite was claimed gets that suite's
holdout unit back: once, in the cancel's transaction, never below what others spent."""

from __future__ import annotations

import pytest

from records import CellSpec, ExposureSpend, Store, eval_id
from schema.errors import NotFound, Refused
from tests._threads import in_threads

ORG = "acme"
AGENT = f"{ORG}/reader"


def _spend(suite: str, org: str = ORG) -> ExposureSpend:
    return ExposureSpend(
        org=org,
        suite_id=suite,
        instance_set=f"set-{suite}",
        label=f"{suite} file",
        limit=3,
        instance_limit=6,
    )


def _eval(
    store: Store,
    cells: list[tuple[str, str]],
    *,
    spends: tuple[str, ...] | None = None,
    agent: str = AGENT,
) -> str:
    """An eval of (suite, split) cells in that order (claims take the lowest idx first),
    spending one unit on each suite with a holdout cell (or on `spends`)."""
    run = eval_id()
    holdout = sorted({suite for suite, split in cells if split == "holdout"})
    store.evals.create(
        eval_id=run,
        agent_id=agent,
        agent_version="1",
        plan={"agent": agent, "agent_version": "1", "suites": []},
        plan_digest="0" * 64,
        full_plan=True,
        cells=[
            CellSpec(n, suite, 1, split, f"c{n}", "0" * 64, 0, [], f"r-{n}")
            for n, (suite, split) in enumerate(cells)
        ],
        exposure=[_spend(s, agent.split("/")[0]) for s in (spends or holdout)],
    )
    return run


def _counts(store: Store, suite: str = "a", org: str = ORG) -> tuple[int, int, int]:
    """(the org's spent, the org's revealed, the instance set's revealed)."""
    (entry,) = store.exposure.list(suite_id=suite, org=org)
    return entry.spent, entry.revealed, store.exposure.instance_revealed(suite, f"set-{suite}")


def test_a_cancel_before_any_holdout_claim_refunds_every_counter(store: Store) -> None:
    run = _eval(store, [("a", "public"), ("a", "holdout")])
    assert _counts(store) == (1, 1, 1) and store.exposure.revealed(["a"]) == {"a": 1}
    (public,) = store.evals.claim(run, "w", 1, lease_s=60)  # a public cell reveals nothing
    assert public.split == "public"
    info, units = store.evals.cancel(run)
    assert info.status == "cancelled"
    (unit,) = units
    assert (unit.suite_id, unit.org, unit.refunded_at is not None) == ("a", ORG, True)
    assert _counts(store) == (0, 0, 0)
    assert store.exposure.revealed(["a"]) == {"a": 0}  # the gate's k too
    assert [u.eval_id for u in store.exposure.refunds(suite_id="a")] == [run]
    assert store.exposure.refunds(suite_id="a", org="other") == []


def test_a_claimed_holdout_cell_keeps_the_unit_spent_even_if_given_back(store: Store) -> None:
    """Claim then cancel: the agent may have had a holdout input, so no refund; a claim
    released unanswered counts as claimed (its fence stays raised)."""
    run = _eval(store, [("a", "holdout"), ("a", "holdout")])
    (cell,) = store.evals.claim(run, "w", 1, lease_s=60)
    assert store.evals.release(run, cell.idx, cell.fence)
    _, units = store.evals.cancel(run)
    assert [u.refunded_at for u in units] == [None]
    assert _counts(store) == (1, 1, 1)
    assert store.exposure.refunds(suite_id="a") == []


def test_only_the_suites_never_claimed_are_refunded(store: Store) -> None:
    run = _eval(store, [("b", "holdout"), ("a", "public"), ("a", "holdout")])
    (cell,) = store.evals.claim(run, "w", 1, lease_s=60)
    assert (cell.suite_id, cell.split) == ("b", "holdout")
    _, units = store.evals.cancel(run)
    assert {u.suite_id: u.refunded_at is not None for u in units} == {"a": True, "b": False}
    assert _counts(store, "a") == (0, 0, 0)
    assert _counts(store, "b") == (1, 1, 1)


def test_a_second_cancel_is_refused_and_refunds_nothing(store: Store) -> None:
    first = _eval(store, [("a", "holdout")])
    second = _eval(store, [("a", "holdout")])
    store.evals.cancel(first)
    assert _counts(store) == (1, 1, 1)  # the second eval's unit
    with pytest.raises(Refused, match=f"eval {first} is cancelled, not running"):
        store.evals.cancel(first)
    assert _counts(store) == (1, 1, 1)
    # Cancelled is for good: nothing claims its cells, so nothing reveals them after the refund.
    assert store.evals.claim(first, "w", 5, lease_s=60) == []
    settled = store.evals.record_and_claim(first, [], owner="w", claim=5, lease_s=60)
    assert settled is not None and settled.claimed == [] and settled.status == "cancelled"
    assert store.exposure.units(first)[0].refunded_at is not None
    assert store.exposure.units(second)[0].refunded_at is None


def test_a_done_or_unknown_eval_is_not_cancelled(store: Store) -> None:
    run = _eval(store, [("a", "holdout")])
    store.evals.finish(run, result={"record": None}, record=None)
    with pytest.raises(Refused, match="is done, not running"):
        store.evals.cancel(run)
    assert _counts(store) == (1, 1, 1)
    with pytest.raises(NotFound):
        store.evals.cancel("ev_missing")


def test_a_refund_never_takes_what_another_eval_spent_after_a_reset(store: Store) -> None:
    """The reset forgave the first eval's unit already: its refund gives back the reveal
    counts, not a unit of `spent`, which the second eval took."""
    first = _eval(store, [("a", "holdout")])
    store.exposure.reset(org=ORG, suite_id="a", reset_by="cli:op", reason="test")
    second = _eval(store, [("a", "holdout")])
    assert _counts(store) == (1, 2, 2)
    store.evals.cancel(first)
    assert _counts(store) == (1, 1, 1)
    store.evals.cancel(second)  # not forgiven: every counter comes down
    assert _counts(store) == (0, 0, 0)


def test_a_refund_gives_back_only_its_own_orgs_unit(store: Store) -> None:
    ours = _eval(store, [("a", "holdout")])
    _eval(store, [("a", "holdout")], agent="other/reader")
    store.evals.cancel(ours)
    assert _counts(store) == (0, 0, 1)
    assert _counts(store, org="other") == (1, 1, 1)


def test_a_public_only_eval_has_nothing_to_refund(store: Store) -> None:
    run = _eval(store, [("a", "public")], spends=())
    _, units = store.evals.cancel(run)
    assert units == [] and store.exposure.units(run) == []
    assert store.exposure.list(suite_id="a") == []


@pytest.mark.postgres
def test_two_cancels_at_once_refund_once(pg_store: Store) -> None:
    for _ in range(5):
        run = _eval(pg_store, [("a", "holdout")])
        outcomes: list[str] = []

        def cancel(_: int, run: str = run, outcomes: list[str] = outcomes) -> None:
            try:
                pg_store.evals.cancel(run)
                outcomes.append("cancelled")
            except Refused:
                outcomes.append("refused")

        assert in_threads(cancel, range(2), at_once=True) == []
        assert sorted(outcomes) == ["cancelled", "refused"]
        assert _counts(pg_store) == (0, 0, 0)


@pytest.mark.postgres
def test_a_claim_racing_a_cancel_either_reveals_or_is_refunded(pg_store: Store) -> None:
    """Never both: a claim that took a holdout cell means no refund, a refund means the
    claim took nothing."""
    for round_ in range(8):
        suite = f"r{round_}"  # a budget of its own each round
        run = _eval(pg_store, [(suite, "holdout"), (suite, "holdout")])
        claimed: list[int] = []

        def act(which: int, run: str = run, claimed: list[int] = claimed) -> None:
            if which == 0:
                pg_store.evals.cancel(run)
            else:
                claimed.extend(c.idx for c in pg_store.evals.claim(run, "w", 2, lease_s=60))

        assert in_threads(act, range(2), at_once=True) == []
        (unit,) = pg_store.exposure.units(run)
        assert (unit.refunded_at is not None) == (claimed == [])
        assert _counts(pg_store, suite) == ((1, 1, 1) if claimed else (0, 0, 0))
