"""`holon tokens …` through the CLI: the token is shown once and never again."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from records import Store, utcnow
from tests.gateway._cli import CLI
from tests.gateway.server._gateway import running_gateway


def test_create_list_revoke(cli: CLI) -> None:
    created = cli("tokens", "create", "--role", "caller:finance-bot", "--note", "bot", "--json")
    assert created.code == 0
    body = created.json()
    token, token_id = body["token"], body["id"]
    assert body["role"] == "caller:finance-bot"
    listed = cli("tokens", "list", "--json")
    assert token not in listed.stdout
    assert [t["id"] for t in listed.json()["items"]] == [token_id]
    human = cli("tokens", "list")
    assert token_id in human.stdout and token not in human.stdout
    assert cli("tokens", "revoke", token_id).code == 0
    assert cli("tokens", "list", "--json").json()["items"] == []
    assert cli("tokens", "list", "--all", "--json").json()["items"][0]["revoked_at"]


def test_bad_role_and_unknown_token(cli: CLI) -> None:
    res = cli("tokens", "create", "--role", "admin", "--json")
    assert res.code == 2 and res.json()["error"]["code"] == "usage"
    assert cli("tokens", "revoke", "tok_nope").code == 2


def test_plain_output_is_just_the_token(cli: CLI) -> None:
    res = cli("tokens", "create", "--role", "operator")
    assert res.code == 0
    assert res.stdout.strip().startswith("hol_") and len(res.stdout.strip().split()) == 1
    assert "shown once" in res.stderr


def test_expiry_is_stored_and_listed(cli: CLI) -> None:
    created = cli("tokens", "create", "--role", "operator", "--expires-in", "30d", "--json")
    assert created.code == 0
    body = created.json()
    expires = datetime.fromisoformat(body["expires_at"])
    assert timedelta(days=29, hours=23) < expires - utcnow() <= timedelta(days=30)
    never = cli("tokens", "create", "--role", "org:acme", "--json").json()
    assert never["expires_at"] is None  # no expiry unless asked
    listed = {t["id"]: t for t in cli("tokens", "list", "--json").json()["items"]}
    assert listed[body["id"]]["expired"] is False and listed[body["id"]]["expires_at"]
    assert listed[never["id"]]["expires_at"] is None
    assert body["token"] not in str(listed)
    human = cli("tokens", "list")
    assert "expires" in human.stdout.splitlines()[0] and body["expires_at"] in human.stdout
    note = cli("tokens", "create", "--role", "operator", "--expires-in", "1h")
    assert "expires 20" in note.stderr


def test_expired_tokens_are_marked(cli: CLI, tmp_path: Path) -> None:
    from gateway.service import StoreService
    from gateway.settings import Settings

    client = StoreService.from_settings(Settings.from_env(cli.env))
    try:
        info, token = client.store.tokens.create("operator", expires_at=utcnow())
    finally:
        client.close()
    (row,) = cli("tokens", "list", "--json").json()["items"]
    assert row["id"] == info.id and row["expired"] is True
    assert "(expired)" in cli("tokens", "list").stdout and token not in cli("tokens", "list").stdout


@pytest.mark.parametrize("duration", ["30", "30 d", "1w", "0h", "5M", "3651d", "soon"])
def test_a_bad_duration_is_named_with_its_flag(cli: CLI, duration: str) -> None:
    res = cli("tokens", "create", "--role", "operator", "--expires-in", duration, "--json")
    assert res.code == 2
    error = res.json()["error"]
    assert error["code"] == "usage" and error["details"]["path"] == "--expires-in"
    assert cli("tokens", "list", "--json").json()["items"] == []  # nothing was created


@pytest.mark.slow
def test_tokens_through_a_gateway(store: Store, tmp_path: Path) -> None:
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        remote = CLI(
            tmp_path / "client", HOLON_GATEWAY_URL=gw.url, HOLON_TOKEN=gw.token("operator")
        )
        created = remote(
            "tokens", "create", "--role", "caller:cli-bot", "--expires-in", "2h", "--json"
        )
        assert created.code == 0, created.stderr
        body = created.json()
        token = body["token"]
        assert store.tokens.authenticate(token) is not None
        listed = remote("tokens", "list", "--json")
        assert listed.code == 0 and token not in listed.stdout
        assert body["id"] in [t["id"] for t in listed.json()["items"]]
        assert remote("tokens", "revoke", body["id"], "--json").json()["revoked"] is True
        assert store.tokens.authenticate(token) is None
        # The flag is checked here, before anything is sent.
        bad = remote("tokens", "create", "--role", "operator", "--expires-in", "2 h", "--json")
        assert bad.code == 2 and bad.json()["error"]["details"]["path"] == "--expires-in"
        # A caller's token may not manage tokens.
        caller = CLI(
            tmp_path / "client",
            HOLON_GATEWAY_URL=gw.url,
            HOLON_TOKEN=gw.token("caller:finance-bot"),
        )
        refused = caller("tokens", "list", "--json")
        assert refused.code == 2 and refused.json()["error"]["code"] == "forbidden"
