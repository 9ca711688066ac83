"""`holon tokens …` through the CLI: the token is shown once and never again."""

from __future__ import annotations

from tests.gateway._cli import CLI


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
