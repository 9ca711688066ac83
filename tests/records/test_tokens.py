"""API tokens on SQLite and PostgreSQL: random, shown once, stored hashed, revocable."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from records import Store
from schema.errors import NotFound, UsageError


def test_create_authenticate_revoke(store: Store) -> None:
    info, token = store.tokens.create("org:acme", "ci of acme")
    assert token.startswith("hol_") and len(token) >= 40
    assert info.role == "org:acme" and info.active
    assert store.tokens.authenticate(token) == info
    assert store.tokens.authenticate(token + "x") is None
    assert store.tokens.authenticate("nonsense") is None
    with store.engine.connect() as conn:
        stored = conn.execute(text("SELECT token_hash, prefix FROM tokens")).one()
    assert token not in stored[0] and token[4:] not in "".join(stored)
    revoked = store.tokens.revoke(info.id)
    assert not revoked.active
    assert store.tokens.authenticate(token) is None
    assert store.tokens.list() == []
    assert [t.id for t in store.tokens.list(include_revoked=True)] == [info.id]


def test_tokens_are_distinct(store: Store) -> None:
    tokens = {store.tokens.create("operator")[1] for _ in range(20)}
    assert len(tokens) == 20


@pytest.mark.parametrize(
    "role", ["admin", "org:", "org:Acme", "caller:", "caller:has space", "org:-x", "operator:x"]
)
def test_bad_roles_are_refused(store: Store, role: str) -> None:
    with pytest.raises(UsageError, match="not a role"):
        store.tokens.create(role)


def test_revoking_an_unknown_token(store: Store) -> None:
    with pytest.raises(NotFound):
        store.tokens.revoke("tok_nope")
