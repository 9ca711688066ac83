"""The agent registry on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import event, text

from records import Store
from schema.errors import Conflict, NotFound


def manifest(
    agent: str = "acme/invoice-reader", version: str = "1.0.0", **extra: Any
) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "id": agent,
        "version": version,
        "protocol": "holon-http",
        "endpoint": "https://agents.acme.example/invoice",
        "capabilities": ["invoice.extract"],
        **extra,
    }


def test_register_update_and_keep_history(store: Store) -> None:
    first = store.agents.register(manifest())
    assert first.status == "created" and first.previous_version is None
    assert store.agents.register(manifest()).status == "unchanged"
    second = store.agents.register(manifest(version="1.1.0", contact="ops@acme.example"))
    assert second.status == "updated" and second.previous_version == "1.0.0"
    assert store.agents.get("acme/invoice-reader").version == "1.1.0"
    history = store.agents.history("acme/invoice-reader")
    assert [(v.version, v.seq) for v in history] == [("1.0.0", 1), ("1.1.0", 2)]
    assert store.agents.manifest("acme/invoice-reader", "1.0.0") == manifest()
    back = store.agents.register(manifest())
    assert back.status == "reactivated" and back.agent.version == "1.0.0"


def test_a_version_keeps_its_manifest(store: Store) -> None:
    store.agents.register(manifest())
    with pytest.raises(Conflict, match="already registered with another manifest") as caught:
        store.agents.register(manifest(endpoint="https://elsewhere.example/"))
    assert caught.value.exit_code == 2
    # Nothing changed.
    assert store.agents.manifest("acme/invoice-reader") == manifest()


def test_money_and_numbers_round_trip_exactly(store: Store) -> None:
    from decimal import Decimal

    doc = manifest(limits={"max_cost_usd": "0.05", "timeout_s": Decimal("2.5")})
    store.agents.register(doc)
    stored = store.agents.manifest("acme/invoice-reader")
    assert stored["limits"]["timeout_s"] == Decimal("2.5")
    assert stored["limits"]["max_cost_usd"] == "0.05"


def test_unknown_agents_are_not_found(store: Store) -> None:
    for call in (
        lambda: store.agents.get("acme/nobody"),
        lambda: store.agents.history("acme/nobody"),
        lambda: store.agents.set_disabled("acme/nobody", True),
        lambda: store.agents.set_secret("acme/nobody", "x"),
    ):
        with pytest.raises(NotFound):
            call()


def test_disable_hides_from_listing_but_keeps_the_agent(store: Store) -> None:
    store.agents.register(manifest())
    store.agents.register(manifest("acme/ticket-triage", capabilities=["ticket.classify"]))
    assert store.agents.set_disabled("acme/invoice-reader", True).disabled
    assert [a.id for a in store.agents.list().items] == ["acme/ticket-triage"]
    listed = store.agents.list(include_disabled=True).items
    assert [a.id for a in listed] == ["acme/invoice-reader", "acme/ticket-triage"]
    assert not store.agents.set_disabled("acme/invoice-reader", False).disabled


def test_listing_pages_with_a_cursor_and_filters(store: Store) -> None:
    for i in range(7):
        caps = ["ticket.classify"] if i % 2 else ["invoice.extract"]
        store.agents.register(manifest(f"org{i % 2}/agent-{i}", capabilities=caps))
    seen: list[str] = []
    cursor = None
    while True:
        page = store.agents.list(limit=3, cursor=cursor)
        seen += [a.id for a in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == sorted(seen) and len(seen) == 7
    assert [a.id for a in store.agents.list(org="org1").items] == [
        "org1/agent-1",
        "org1/agent-3",
        "org1/agent-5",
    ]
    only = store.agents.list(capability="ticket.classify").items
    assert {a.id for a in only} == {"org1/agent-1", "org1/agent-3", "org1/agent-5"}


def test_a_listing_page_is_a_few_statements_whatever_its_size(store: Store) -> None:
    """The manifest and the secret come joined: a page of 300 agents is not 601 reads; a
    capability's page walks past the agents that lack it and pages as the rest."""
    for i in range(300):
        caps = ["ticket.classify"] if i % 3 == 0 else ["invoice.extract"]
        store.agents.register(manifest(f"org/agent-{i:03}", capabilities=caps))
    store.agents.set_secret("org/agent-007", "s")
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(str(args[2]))

    event.listen(store.engine, "before_cursor_execute", count)
    try:
        page = store.agents.list(limit=300)
    finally:
        event.remove(store.engine, "before_cursor_execute", count)
    assert len(page.items) == 300 and page.next_cursor is None
    assert [a.id for a in page.items if a.has_secret] == ["org/agent-007"]
    assert len([s for s in statements if s.lstrip().upper().startswith("SELECT")]) <= 3
    full = store.agents.list(limit=100)
    assert len(full.items) == 100 and full.next_cursor is not None
    seen: list[str] = []
    cursor = None
    while True:
        page = store.agents.list(capability="ticket.classify", limit=30, cursor=cursor)
        seen += [a.id for a in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [f"org/agent-{i:03}" for i in range(0, 300, 3)]


def test_secrets_are_encrypted_at_rest_and_write_only(store: Store) -> None:
    store.agents.register(manifest())
    assert store.agents.secret("acme/invoice-reader") is None
    store.agents.set_secret("acme/invoice-reader", "tok-very-secret")
    assert store.agents.get("acme/invoice-reader").has_secret
    assert store.agents.secret("acme/invoice-reader") == "tok-very-secret"
    with store.engine.connect() as conn:
        raw = conn.execute(text("SELECT ciphertext FROM agent_secrets")).scalar_one()
    assert b"tok-very-secret" not in bytes(raw)
    assert store.agents.clear_secret("acme/invoice-reader") is True
    assert store.agents.clear_secret("acme/invoice-reader") is False
    assert store.agents.secret("acme/invoice-reader") is None


def test_concurrent_registrations_of_new_versions_all_land(store: Store) -> None:
    store.agents.register(manifest())
    errors: list[BaseException] = []

    def register(version: str) -> None:
        try:
            store.agents.register(manifest(version=version))
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=register, args=(f"2.0.{i}",)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    history = store.agents.history("acme/invoice-reader")
    # Registrations of one agent are serialised: all land, with distinct seqs.
    assert errors == []
    assert sorted(v.seq for v in history) == list(range(1, 10))


def test_concurrent_first_registrations_of_one_agent(store: Store) -> None:
    results: list[str] = []
    errors: list[BaseException] = []

    def register() -> None:
        try:
            results.append(store.agents.register(manifest()).status)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=register) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(results) == ["created"] + ["unchanged"] * 5
