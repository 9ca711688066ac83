"""Mandate history on SQLite and PostgreSQL: every revision kept, with its time and granter;
the migration that started keeping them backfills each existing mandate's current document."""

from __future__ import annotations

from datetime import timedelta
from typing import cast

import pytest
from sqlalchemy import Table

from records import LOCAL, Store, open_engine, open_store, upgrade, utcnow
from records._models import MandateRow, TokenRow
from schema.errors import NotFound
from tests.gateway.server._gateway import mandate

_document = mandate  # a mandate document, as the gateway tests grant them


def test_every_revision_is_kept_with_its_time_and_granter(store: Store) -> None:
    before = utcnow()
    status, first = store.mandates.grant(_document())
    assert status == "created" and first.revision == 1
    assert store.mandates.grant(_document())[0] == "unchanged"  # no new revision
    status, second = store.mandates.grant(
        _document(max_cost_per_call_usd="0.02"), granted_by="tok_01JOPERATOR"
    )
    assert status == "updated" and second.revision == 2
    revisions = store.mandates.revisions("finance-tickets")
    assert [(r.revision, r.granted_by) for r in revisions] == [(1, LOCAL), (2, "tok_01JOPERATOR")]
    assert revisions[0].document["max_cost_per_call_usd"] == "0.01"
    assert revisions[1].document["max_cost_per_call_usd"] == "0.02"
    assert revisions[0].digest == first.digest and revisions[1].digest == second.digest
    assert before <= revisions[0].granted_at <= revisions[1].granted_at <= utcnow()
    # The current document stays where it was.
    assert store.mandates.get("finance-tickets").document == revisions[1].document

    # Revoked, then granted the same document again: reinstated as a new revision.
    store.mandates.revoke("finance-tickets")
    status, third = store.mandates.grant(_document(max_cost_per_call_usd="0.02"))
    assert status == "reinstated" and third.revision == 3
    assert [r.revision for r in store.mandates.revisions("finance-tickets")] == [1, 2, 3]


def test_revisions_of_an_unknown_mandate(store: Store) -> None:
    with pytest.raises(NotFound):
        store.mandates.revisions("nope")


def test_the_migration_backfills_each_mandate_as_its_current_revision(store_url: str) -> None:
    engine = open_engine(store_url)
    granted = utcnow() - timedelta(days=3)
    updated = utcnow() - timedelta(days=1)
    try:
        upgrade(engine, "0006")
        mandates = cast(Table, MandateRow.__table__)
        tokens = cast(Table, TokenRow.__table__)
        with engine.begin() as conn:
            conn.execute(
                mandates.insert(),
                [
                    {
                        "id": "fresh",
                        "holder": "finance-bot",
                        "document": _document(id="fresh"),
                        "digest": "d1",
                        "revision": 1,
                        "granted_at": granted,
                        "updated_at": granted,
                        "revoked_at": None,
                    },
                    {
                        "id": "regranted",
                        "holder": "ops-bot",
                        "document": _document(id="regranted", holder="ops-bot"),
                        "digest": "d4",
                        "revision": 4,
                        "granted_at": granted,
                        "updated_at": updated,
                        "revoked_at": None,
                    },
                ],
            )
            conn.execute(
                tokens.insert(),
                {
                    "id": "tok_old",
                    "role": "operator",
                    "token_hash": "0" * 64,
                    "prefix": "hol_abcd",
                    "note": None,
                    "created_at": granted,
                    "revoked_at": None,
                },
            )
    finally:
        engine.dispose()
    store = open_store(store_url, auto_upgrade=True)
    try:
        (fresh,) = store.mandates.revisions("fresh")
        assert (fresh.revision, fresh.granted_at, fresh.granted_by) == (1, granted, None)
        assert fresh.document == _document(id="fresh") and fresh.digest == "d1"
        (regranted,) = store.mandates.revisions("regranted")
        assert (regranted.revision, regranted.granted_at) == (4, updated)
        assert regranted.holder == "ops-bot"
        # The next grant continues the history from the backfilled revision.
        status, info = store.mandates.grant(_document(id="regranted", holder="ops-bot"))
        assert status == "updated" and info.revision == 5
        assert [r.revision for r in store.mandates.revisions("regranted")] == [4, 5]
        # An existing token never expires and was never seen in use.
        (token,) = store.tokens.list()
        assert token.expires_at is None and token.last_used_at is None
    finally:
        store.close()
