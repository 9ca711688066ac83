"""store.evals.search: the console's list of evals, filtered in SQL and by plan, bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from records import EvalFilter, Store, eval_id


def _eval(store: Store, agent: str, suite: str = "tiny", capability: str = "a.b") -> str:
    run = eval_id()
    store.evals.create(
        eval_id=run,
        agent_id=agent,
        agent_version="1",
        plan={"suites": [{"id": suite, "capability": capability}]},
        plan_digest="0" * 64,
        full_plan=False,
        cells=[],
    )
    return run


def test_filters_and_an_orgs_own(sqlite_store: Store) -> None:
    ours = _eval(sqlite_store, "acme/x")
    rare = _eval(sqlite_store, "acme/y", suite="rare", capability="c.d")
    theirs = _eval(sqlite_store, "acme-other/x")
    sqlite_store.evals.cancel(theirs)

    def ids(**where: object) -> list[str]:
        page = sqlite_store.evals.search(EvalFilter(**where))  # type: ignore[arg-type]
        return [e.id for e in page.items]

    # Newest first: by id, time-ordered ULIDs (within one millisecond, by their random part).
    assert ids() == sorted([theirs, rare, ours], reverse=True)
    assert ids(org="acme") == sorted(
        [rare, ours], reverse=True
    )  # not acme-other's: the org is "acme/"
    assert ids(org="acme-other") == [theirs]
    assert ids(org="acm") == []
    assert ids(org="a%") == [] and ids(org="acme_other") == []  # no wildcards
    assert ids(status="cancelled") == [theirs]
    assert ids(agent="acme/y") == [rare]
    assert ids(suite="rare") == [rare] and ids(capability="c.d") == [rare]
    assert ids(suite="rare", capability="a.b") == []
    assert ids(origin="imported") == [] and len(ids(origin="here")) == 3
    now = datetime.now(UTC)
    assert len(ids(since=now - timedelta(hours=1), until=now + timedelta(hours=1))) == 3
    assert ids(until=now - timedelta(hours=1)) == []


def test_pages_and_a_bounded_scan(sqlite_store: Store) -> None:
    made = [_eval(sqlite_store, "acme/x") for _ in range(7)]
    newest = sorted(made, reverse=True)  # ids are time-ordered (ULIDs)
    first = sqlite_store.evals.search(EvalFilter(), limit=3)
    assert [e.id for e in first.items] == newest[:3] and first.next_cursor
    second = sqlite_store.evals.search(EvalFilter(), cursor=first.next_cursor, limit=3)
    assert [e.id for e in second.items] == newest[3:6]
    third = sqlite_store.evals.search(EvalFilter(), cursor=second.next_cursor, limit=3)
    assert [e.id for e in third.items] == newest[6:] and third.next_cursor is None
    # A filter on the plan reads at most `scan` rows a page, then hands a cursor on.
    rare = _eval(sqlite_store, "acme/x", suite="rare")
    for _ in range(5):
        _eval(sqlite_store, "acme/x")
    short = sqlite_store.evals.search(EvalFilter(suite="rare"), limit=3, scan=4)
    assert short.items == [] and short.next_cursor is not None
    rest = sqlite_store.evals.search(
        EvalFilter(suite="rare"), cursor=short.next_cursor, limit=3, scan=4
    )
    assert [e.id for e in rest.items] == [rare]
