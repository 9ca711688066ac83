"""Where the CLI reads its gateway token: HOLON_TOKEN, --token-file PATH or -, and --token (warned).

The token must never show in any output or log line, the warning included.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from records import new_key, open_store
from tests._servers import free_port
from tests.campaign._tally import record
from tests.gateway._cli import CLI, Result
from tests.gateway.server._gateway import Gateway, register_triage, running_gateway

WARNING = "--token puts the token in the process list"


def _closed_port_url() -> str:
    # Nobody listens: errors before any request are ours.
    return f"http://127.0.0.1:{free_port()}"


CAMPAIGN = "CLI token sources"


def _usage(result: Result) -> str:
    assert result.code == 2, (result.stdout, result.stderr)
    record(CAMPAIGN, "exit 2, located")
    return result.stderr


def test_a_missing_token_file_is_a_located_usage_error(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home", HOLON_GATEWAY_URL=_closed_port_url())
    missing = tmp_path / "nope.txt"
    err = _usage(cli("agents", "list", "--token-file", str(missing)))
    assert f"--token-file {missing}" in err and "No such file" in err
    as_json = cli("agents", "list", "--token-file", str(missing), "--json").json()
    assert as_json["error"]["code"] == "usage" and as_json["error"]["details"]["file"] == str(
        missing
    )
    folder = _usage(cli("agents", "list", "--token-file", str(tmp_path)))
    assert f"--token-file {tmp_path}" in folder


@pytest.mark.parametrize("content", ["", "\n", "   \nhol_second_line\n"])
def test_an_empty_token_file_names_its_first_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "token"
    path.write_text(content, encoding="utf-8")
    cli = CLI(tmp_path / "home", HOLON_GATEWAY_URL=_closed_port_url())
    err = _usage(cli("agents", "list", "--token-file", str(path)))
    assert f"--token-file {path}:1: the first line is empty" in err
    assert "hol_second_line" not in err
    stdin = _usage(cli("agents", "list", "--token-file", "-", stdin=content))
    assert "--token-file -:1: the first line is empty" in stdin


def test_a_token_file_that_is_not_text(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_bytes(b"\xff\xfe\x00")
    cli = CLI(tmp_path / "home", HOLON_GATEWAY_URL=_closed_port_url())
    assert "not text" in _usage(cli("agents", "list", "--token-file", str(path)))


def test_token_file_and_token_together_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("hol_secret_value\n", encoding="utf-8")
    cli = CLI(tmp_path / "home", HOLON_GATEWAY_URL=_closed_port_url())
    result = cli("agents", "list", "--token-file", str(path), "--token", "hol_secret_value")
    assert "not both" in _usage(result) and "hol_secret_value" not in result.stderr


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    root = tmp_path_factory.mktemp("token-sources")
    store = open_store(f"sqlite:///{root / 'holon.db'}", secret_key=new_key(), auto_upgrade=True)
    register_triage(store)
    with running_gateway(store, root / "home", eval_workers=0) as gw:
        yield gw
    store.close()


@pytest.mark.slow
def test_each_way_of_passing_the_token_works(gateway: Gateway, tmp_path: Path) -> None:
    token = gateway.tokens["operator"]
    home = tmp_path / "client"
    url = gateway.url
    path = tmp_path / "token"
    path.write_text(token + "\nignored second line\n", encoding="utf-8")
    ways = {
        "HOLON_TOKEN": CLI(home, HOLON_GATEWAY_URL=url, HOLON_TOKEN=token)("agents", "list"),
        "--token-file": CLI(home, HOLON_GATEWAY_URL=url)(
            "agents", "list", "--token-file", str(path)
        ),
        "--token-file -": CLI(home, HOLON_GATEWAY_URL=url)(
            "agents", "list", "--token-file", "-", stdin=token + "\n"
        ),
        "--token": CLI(home, HOLON_GATEWAY_URL=url)("agents", "list", "--token", token),
        "--token --debug": CLI(home, HOLON_GATEWAY_URL=url)(
            "agents", "list", "--token", token, "--debug"
        ),
    }
    for way, result in ways.items():
        assert result.code == 0, (way, result.stderr)
        assert "acme/ticket-triage" in result.stdout, way
        assert token not in result.stdout + result.stderr, way  # never shown, logs included
        warned = result.stderr.count(WARNING)
        assert warned == (1 if way.startswith("--token ") or way == "--token" else 0), (
            way,
            result.stderr,
        )
        record(CAMPAIGN, "worked, token not shown")
    # A refused token is not echoed either.
    bad = "hol_not-a-real-token"
    refused = CLI(home, HOLON_GATEWAY_URL=url)("agents", "list", "--token", bad, "--json")
    assert refused.code == 2 and refused.json()["error"]["code"] == "unauthorized"
    assert bad not in refused.stdout + refused.stderr
    record(CAMPAIGN, "refused, token not shown")
