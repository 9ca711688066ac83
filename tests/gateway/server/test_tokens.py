"""Tokens at the gateway: expiry (exact, even cached), coarse last use, and /v1/tokens.

The gateway is real (uvicorn on 127.0.0.1) over a real store on SQLite and
PostgreSQL; the clock-driven cases drive the token cache itself with clocks
of their own, so nothing sleeps.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway.web import NOT_A_TOKEN, TokenCache, _auth
from records import Store, utcnow
from schema.errors import Unauthorized
from tests.gateway.server._gateway import Gateway, running_gateway, statements

ROLES = ("operator", "org:acme", "caller:finance-bot")


def token_writes(store: Store) -> AbstractContextManager[list[str]]:
    """Every statement that writes the tokens table, as the driver is sent it."""
    return statements(store, lambda sql: sql.lstrip().upper().startswith("UPDATE TOKENS"))


def _settle_uses() -> None:
    """Wait for the last-use writes queued so far (they are never waited for by requests)."""
    _auth._TOUCHER.submit(lambda: None).result()


class Clocks:
    def __init__(self) -> None:
        self.wall = utcnow()
        self.mono = 1000.0

    def advance(self, seconds: float) -> None:
        self.wall += timedelta(seconds=seconds)
        self.mono += seconds

    def cache(self, store: Store) -> TokenCache:
        """A token cache that keeps entries for an hour, on these clocks."""
        return TokenCache(
            store, ttl_s=3600, clock=lambda: self.wall.timestamp(), monotonic=lambda: self.mono
        )


async def _direct(fn: Any, *args: Any) -> Any:
    return fn(*args)


# -- the token cache, with its clocks in hand ---------------------------------------------


@pytest.mark.anyio
async def test_expiry_is_exact_even_for_a_cached_token(store: Store) -> None:
    clocks = Clocks()
    info, token = store.tokens.create("operator", expires_at=clocks.wall + timedelta(seconds=30))
    cache = clocks.cache(store)
    header = f"Bearer {token}"
    assert (await cache.bearer(header, _direct)).token_id == info.id
    clocks.advance(29.999)
    assert (await cache.bearer(header, _direct)).token_id == info.id  # from the cache
    clocks.advance(0.001)  # its expiry: still cached, and refused
    with pytest.raises(Unauthorized) as expired:
        await cache.bearer(header, _direct)
    with pytest.raises(Unauthorized) as unknown:
        await cache.bearer("Bearer hol_" + "x" * 43, _direct)
    assert expired.value.message == unknown.value.message == NOT_A_TOKEN
    assert expired.value.details == unknown.value.details
    _settle_uses()


@pytest.mark.anyio
async def test_last_use_is_queued_once_a_minute_per_token(store: Store) -> None:
    clocks = Clocks()
    cache = clocks.cache(store)
    first, one = store.tokens.create("caller:finance-bot")
    second, two = store.tokens.create("caller:ops-bot")
    started = clocks.wall
    with token_writes(store) as writes:
        for _ in range(60):  # a minute of calls, one a second, from both tokens
            await cache.bearer(f"Bearer {one}", _direct)
            await cache.bearer(f"Bearer {two}", _direct)
            clocks.advance(0.99)
        _settle_uses()
        assert len(writes) == 2  # one per token
        clocks.advance(1)
        await cache.bearer(f"Bearer {one}", _direct)
        _settle_uses()
        assert len(writes) == 3
    used = {t.id: t.last_used_at or datetime.min.replace(tzinfo=UTC) for t in store.tokens.list()}
    # When each was first used in its minute (to the clock's float precision).
    assert abs(used[second.id] - started) < timedelta(milliseconds=1)
    assert abs(used[first.id] - clocks.wall) < timedelta(milliseconds=1)


# -- a running gateway --------------------------------------------------------------------


@pytest.fixture
def gw(store: Store, tmp_path: Path) -> Iterator[Gateway]:
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gateway:
        yield gateway


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_an_expired_token_is_refused_like_an_unknown_one(gw: Gateway, store: Store) -> None:
    _, expired = store.tokens.create("operator", expires_at=utcnow() - timedelta(seconds=1))
    refused = gw.http.get(gw.url + "/v1/tokens", headers=_bearer(expired))
    unknown = gw.http.get(gw.url + "/v1/tokens", headers=_bearer("hol_" + "A" * 43))
    assert refused.status_code == unknown.status_code == 401
    assert refused.json() == unknown.json()
    assert refused.json()["error"]["message"] == NOT_A_TOKEN


def test_last_use_is_written_once_however_many_calls(gw: Gateway, store: Store) -> None:
    token = gw.token("caller:finance-bot")
    _settle_uses()
    with token_writes(store) as writes:
        for _ in range(30):
            assert gw.call("GET", "/v1/ledger", "caller:finance-bot").status_code == 200
        _settle_uses()
    assert len(writes) == 1
    (info,) = [t for t in store.tokens.list() if t.role == "caller:finance-bot"]
    assert info.last_used_at is not None and utcnow() - info.last_used_at < timedelta(minutes=1)
    listed = gw.call("GET", "/v1/tokens", "operator").json()["items"]
    (view,) = [t for t in listed if t["id"] == info.id]
    assert view["last_used_at"] is not None and token not in str(listed)


def test_operators_create_list_and_revoke_over_the_api(
    gw: Gateway, store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    server_log = logging.getLogger("uvicorn")
    server_log.addHandler(caplog.handler)
    try:
        _create_list_revoke(gw)
        rows = [r.getMessage() for r in caplog.records]
    finally:
        server_log.removeHandler(caplog.handler)
    every_token = list(gw.tokens.values())
    assert not [line for line in rows for token in every_token if token in line]


def _create_list_revoke(gw: Gateway) -> None:
    created = gw.call(
        "POST",
        "/v1/tokens",
        "operator",
        json={"role": "caller:new-bot", "note": "the new bot", "expires_in": "12h"},
    )
    assert created.status_code == 201, created.text
    assert created.headers["cache-control"] == "no-store"  # the one response with a token
    body = created.json()
    token = body.pop("token")
    gw.tokens["caller:new-bot"] = token
    assert token.startswith("hol_") and body["role"] == "caller:new-bot"
    assert body["prefix"] == token[:8] + "…" and body["expired"] is False
    expires = datetime.fromisoformat(body["expires_at"])
    assert timedelta(hours=11, minutes=59) < expires - utcnow() <= timedelta(hours=12)
    # It works at once.
    assert gw.call("GET", "/v1/ledger", "caller:new-bot").status_code == 200

    listed = gw.call("GET", "/v1/tokens", "operator")
    assert listed.status_code == 200
    assert token not in listed.text and token[8:] not in listed.text
    (view,) = [t for t in listed.json()["items"] if t["id"] == body["id"]]
    assert view == body | {"last_used_at": view["last_used_at"]}

    revoked = gw.call("POST", f"/v1/tokens/{body['id']}/revoke", "operator")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    assert token not in revoked.text
    # The gateway caches nothing here (cache_ttl_s 0): refused at once.
    assert gw.call("GET", "/v1/ledger", "caller:new-bot").status_code == 401
    assert all(
        t["id"] != body["id"] for t in gw.call("GET", "/v1/tokens", "operator").json()["items"]
    )
    every = gw.call("GET", "/v1/tokens?include_revoked=true", "operator")
    assert body["id"] in every.text and token not in every.text
    assert gw.call("POST", "/v1/tokens/tok_nope/revoke", "operator").status_code == 404


@pytest.mark.parametrize("role", ["org:acme", "caller:finance-bot"])
def test_only_operators_manage_tokens(gw: Gateway, store: Store, role: str) -> None:
    victim, _ = store.tokens.create("caller:victim")

    def standing() -> list[tuple[str, bool]]:
        return [(t.id, t.active) for t in store.tokens.list(include_revoked=True)]

    before = standing()
    attempts = [
        gw.call("POST", "/v1/tokens", role, json={"role": "operator"}),
        gw.call("GET", "/v1/tokens", role),
        gw.call("POST", f"/v1/tokens/{victim.id}/revoke", role),
    ]
    assert [r.status_code for r in attempts] == [403, 403, 403]
    assert all(r.json()["error"]["code"] == "forbidden" for r in attempts)
    assert all("hol_" not in r.text for r in attempts)
    # Nothing was created, and the victim's token is not revoked.
    assert standing() == before
    assert gw.call("POST", "/v1/tokens", None, json={"role": "operator"}).status_code == 401


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"role": "admin"}, None),
        ({"role": "operator", "expires_in": "30 days"}, "$.expires_in"),
        ({"role": "operator", "expires_in": 30}, "$.expires_in"),
        ({"role": "operator", "expires_in": None}, "$.expires_in"),
        ({"role": "operator", "expires_in": "0d"}, "$.expires_in"),
        ({"role": "operator", "expires_in": "9999d"}, "$.expires_in"),
        ({"role": "operator", "note": 7}, "$.note"),
        ({"role": "operator", "token": "hol_mine"}, "$.token"),
        ({"note": "no role"}, "$.role"),
    ],
)
def test_bad_token_requests_are_located(
    gw: Gateway, store: Store, body: dict[str, Any], path: str | None
) -> None:
    before = len(store.tokens.list())
    answer = gw.call("POST", "/v1/tokens", "operator", json=body)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["code"] == "usage"
    if path is not None:
        assert error["details"]["path"] == path
    assert len(store.tokens.list()) == before


def test_a_revocation_reaches_every_process_within_the_cache_ttl(
    store: Store, tmp_path: Path
) -> None:
    """Two gateways on one store (as `--workers 2` runs them), each caching tokens for
    half a second: one revokes over the API, the other refuses the token within that."""
    ttl = 0.5
    with (
        running_gateway(store, tmp_path / "a", eval_workers=0, cache_ttl_s=ttl) as one,
        running_gateway(store, tmp_path / "b", eval_workers=0, cache_ttl_s=ttl) as two,
    ):
        created = one.call("POST", "/v1/tokens", "operator", json={"role": "caller:short"})
        token = created.json()["token"]
        for gateway in (one, two):  # cached in both now
            assert gateway.http.get(gateway.url + "/v1/ledger", headers=_bearer(token)).is_success
        revoked = one.call("POST", f"/v1/tokens/{created.json()['id']}/revoke", "operator")
        assert revoked.status_code == 200
        started = time.monotonic()
        for gateway in (two, one):
            while gateway.http.get(gateway.url + "/v1/ledger", headers=_bearer(token)).is_success:
                assert time.monotonic() - started < ttl + 0.5, "accepted past the cache's TTL"
                time.sleep(0.02)
        # And refused from then on (a refresh never brings it back).
        time.sleep(ttl)
        for gateway in (one, two):
            answer = gateway.http.get(gateway.url + "/v1/ledger", headers=_bearer(token))
            assert answer.status_code == 401
