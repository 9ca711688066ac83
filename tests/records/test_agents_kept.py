"""Listing agents through a `keep` predicate: filtered before paginating (SQLite, PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from records import AgentInfo, Page, Store
from tests.records.test_agents import manifest


def _register(store: Store, count: int) -> list[str]:
    ids = [f"acme/agent-{i:02d}" for i in range(count)]
    for agent_id in ids:
        store.agents.register(manifest(agent_id))
    return ids


def _walk(
    store: Store,
    limit: int,
    keep: Callable[[AgentInfo], bool],
    *,
    cursor: str | None = None,
    org: str | None = None,
    capability: str | None = None,
    include_disabled: bool = False,
    max_scan: int = 2000,
) -> list[Page[AgentInfo]]:
    """Every page of one listing, following next_cursor to the end."""
    pages: list[Page[AgentInfo]] = []
    while True:
        page = store.agents.list(
            org=org,
            capability=capability,
            include_disabled=include_disabled,
            cursor=cursor,
            limit=limit,
            keep=keep,
            max_scan=max_scan,
        )
        pages.append(page)
        assert len(pages) < 100, "the cursor does not advance"
        if page.next_cursor is None:
            return pages
        cursor = page.next_cursor


def test_pages_are_full_until_the_last_and_see_every_match_once(store: Store) -> None:
    ids = _register(store, 31)
    wanted = {agent_id for i, agent_id in enumerate(ids) if i % 3 == 0 or i in (28, 29)}

    pages = _walk(store, 3, lambda info: info.id in wanted)

    seen = [info.id for page in pages for info in page.items]
    assert seen == sorted(wanted)  # in id order, none skipped, none repeated
    assert all(len(page.items) == 3 for page in pages[:-1])
    assert 1 <= len(pages[-1].items) <= 3


def test_no_empty_page_after_an_exactly_full_one(store: Store) -> None:
    ids = _register(store, 12)
    wanted = set(ids[2:8])  # six matches, then four agents that do not match

    pages = _walk(store, 3, lambda info: info.id in wanted)

    assert [[i.id for i in p.items] for p in pages] == [ids[2:5], ids[5:8]]
    assert pages[-1].next_cursor is None


def test_no_match_is_one_empty_last_page(store: Store) -> None:
    _register(store, 5)
    assert _walk(store, 2, lambda info: False) == [Page([], None)]


def test_the_scan_bound_cuts_a_page_short_but_the_walk_goes_on(store: Store) -> None:
    ids = _register(store, 40)
    wanted = {ids[1], ids[17], ids[18], ids[39]}
    calls: list[str] = []

    def keep(info: AgentInfo) -> bool:
        calls.append(info.id)
        return info.id in wanted

    first = store.agents.list(limit=3, keep=keep, max_scan=10)
    # Ten rows read, one match: a short page that still says there is more.
    assert [i.id for i in first.items] == [ids[1]]
    assert first.next_cursor is not None
    assert calls == ids[:10]

    pages = [first, *_walk(store, 3, keep, max_scan=10, cursor=first.next_cursor)]
    seen = [info.id for page in pages for info in page.items]
    assert seen == sorted(wanted)
    # Every agent was asked about; only the rows between a returned page's
    # last item and the extra match found after it are asked twice.
    assert set(calls) == set(ids)


def test_keep_combines_with_org_capability_and_disabled(store: Store) -> None:
    ids = _register(store, 6)
    others = [f"other/agent-{i}" for i in range(3)]
    for agent_id in others:
        store.agents.register(manifest(agent_id))
    store.agents.register(manifest("acme/zz-reader", capabilities=["ticket.classify"]))
    store.agents.set_disabled(ids[0], True)

    def everyone(info: AgentInfo) -> bool:
        return True

    acme = _walk(store, 2, everyone, org="acme", capability="invoice.extract")
    assert [i.id for p in acme for i in p.items] == ids[1:]
    with_disabled = _walk(store, 4, everyone, org="acme", include_disabled=True)
    assert [i.id for p in with_disabled for i in p.items] == [*ids, "acme/zz-reader"]
    other = _walk(store, 1000, everyone, org="other")
    assert [i.id for p in other for i in p.items] == others


def test_keep_may_read_the_store_itself(store: Store) -> None:
    # The predicate runs between the registry's sessions: reading the store
    # from it neither deadlocks (SQLite) nor holds two connections (PostgreSQL).
    ids = _register(store, 5)
    store.agents.set_secret(ids[3], "s3cret-value-long-enough-to-pass")
    page = store.agents.list(limit=10, keep=lambda info: store.agents.secret(info.id) is not None)
    assert [i.id for i in page.items] == [ids[3]]
    assert page.next_cursor is None


@pytest.mark.parametrize("limit", [0, 1001])
def test_a_bad_limit_is_refused_with_keep_too(store: Store, limit: int) -> None:
    from schema.errors import UsageError

    with pytest.raises(UsageError, match="limit must be between"):
        store.agents.list(limit=limit, keep=lambda info: True)
