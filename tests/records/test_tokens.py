"""API tokens on SQLite and PostgreSQL: random, shown once, stored hashed, revocable."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from records import LAST_USED_EVERY, Store, parse_duration, utcnow
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


def test_an_expired_token_authenticates_as_nothing(store: Store) -> None:
    now = utcnow()
    info, token = store.tokens.create("operator", expires_at=now + timedelta(hours=1))
    assert store.tokens.authenticate(token, now) == info
    assert store.tokens.authenticate(token, now + timedelta(minutes=59)) == info
    # Exactly at its expiry, and after, it is an unknown token.
    assert store.tokens.authenticate(token, now + timedelta(hours=1)) is None
    assert store.tokens.authenticate(token, now + timedelta(days=1)) is None
    past, old = store.tokens.create("operator", expires_at=now - timedelta(seconds=1))
    assert store.tokens.authenticate(old) is None
    listed = {t.id: t for t in store.tokens.list()}
    assert listed[past.id].expired(now) and not listed[info.id].expired(now)
    assert listed[info.id].expires_at == info.expires_at


def test_last_use_is_written_at_most_once_a_minute(store: Store) -> None:
    info, _ = store.tokens.create("caller:finance-bot")
    now = utcnow()
    assert store.tokens.touch(info.id, now)
    # Every use within the minute finds the stored time fresh enough: no write.
    assert not any(store.tokens.touch(info.id, now + timedelta(seconds=s)) for s in range(59))
    (listed,) = store.tokens.list()
    assert listed.last_used_at is not None and abs(listed.last_used_at - now) < timedelta(
        milliseconds=1
    )
    later = now + LAST_USED_EVERY
    assert store.tokens.touch(info.id, later)
    assert store.tokens.list()[0].last_used_at == later
    assert not store.tokens.touch("tok_nope", later)


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("15m", 900), ("12h", 43200), ("30d", 2592000)]
)
def test_durations(text: str, seconds: int) -> None:
    assert parse_duration(text, "--expires-in") == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "text", ["", "30", "d", "0d", "-1d", "1.5h", "30 d", "30D", "1w", "3651d", "１d", 30, None]
)
def test_bad_durations_are_located(text: object) -> None:
    with pytest.raises(UsageError) as caught:
        parse_duration(text, "$.expires_in")
    assert caught.value.details["path"] == "$.expires_in"
    assert "$.expires_in" in caught.value.message
