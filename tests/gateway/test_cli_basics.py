"""Exit codes, --json on every command, settings and their docs."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from gateway.cli import build_parser
from gateway.settings import SETTINGS, Settings
from records import SCHEMA_REVISION
from tests.gateway._cli import CLI

ROOT = Path(__file__).resolve().parents[2]


def _leaf_parsers(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):  # type: ignore[no-untyped-def]
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield prefix, parser
        return
    for name, child in subs[0].choices.items():
        yield from _leaf_parsers(child, (*prefix, name))


def test_every_command_takes_json() -> None:
    leaves = list(_leaf_parsers(build_parser()))
    assert len(leaves) >= 8
    for path, parser in leaves:
        options = {o for a in parser._actions for o in a.option_strings}
        assert "--json" in options, f"holon {' '.join(path)} has no --json"


def test_version(cli: CLI) -> None:
    import platform
    import tomllib

    from schema import __version__

    text = cli("--version")
    assert text.code == 0 and text.stdout.startswith(f"holon {__version__} (Python ")
    about = cli("--version", "--json")
    assert about.code == 0
    assert about.json() == {
        "holon": __version__,
        "python": platform.python_version(),
        "platform": platform.platform(terse=True),
    }
    # One declaration: the package's metadata takes the version from the same attribute.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "schema._version.__version__"
    }


def test_usage_errors_exit_2(cli: CLI) -> None:
    assert cli("no-such-command").code == 2
    res = cli("agents", "register", "--json")
    assert res.code == 2 and res.json()["error"]["code"] == "usage"
    assert cli().code == 2  # no command: help and exit 2


def test_config_shows_effective_settings(cli: CLI, tmp_path: Path) -> None:
    res = cli("config", "--json")
    assert res.code == 0
    rows = {r["env"]: r for r in res.json()["settings"]}
    assert set(rows) == {s.env for s in SETTINGS}
    assert rows["HOLON_HOME"]["source"] == "env"
    assert rows["HOLON_DATABASE_URL"]["value"].endswith("/home/holon.db")
    human = cli("config")
    assert "HOLON_DATABASE_URL" in human.stdout


def test_secret_settings_are_masked(tmp_path: Path) -> None:
    cli = CLI(tmp_path, HOLON_TOKEN="tok-shown-never")
    res = cli("config", "--json")
    assert "tok-shown-never" not in res.stdout
    assert {r["env"]: r for r in res.json()["settings"]}["HOLON_TOKEN"]["value"] == "(set)"


def test_bad_log_level_is_a_usage_error(tmp_path: Path) -> None:
    res = CLI(tmp_path, HOLON_LOG_LEVEL="LOUD")("config")
    assert res.code == 2 and "HOLON_LOG_LEVEL" in res.stderr


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "1e400", "3601", "ten", "1,5"])
def test_a_bad_body_timeout_is_a_usage_error(tmp_path: Path, value: str) -> None:
    res = CLI(tmp_path, HOLON_BODY_TIMEOUT_S=value)("config")
    assert res.code == 2 and "HOLON_BODY_TIMEOUT_S must be a number of seconds" in res.stderr


def test_the_body_timeout_takes_fractions() -> None:
    assert Settings.from_env({}).body_timeout_s == 10.0
    assert Settings.from_env({"HOLON_BODY_TIMEOUT_S": "0.5"}).body_timeout_s == 0.5


def test_home_defaults_to_the_checkout() -> None:
    settings = Settings.from_env({})
    assert settings.home == ROOT / ".holon"
    assert settings.embedded


def test_every_setting_is_documented() -> None:
    doc = (ROOT / "docs" / "settings.md").read_text()
    documented = set(re.findall(r"`(HOLON_[A-Z_]+)`", doc))
    assert documented == {s.env for s in SETTINGS}


def test_db_status_and_upgrade(cli: CLI) -> None:
    res = cli("db", "upgrade", "--json")
    assert res.code == 0
    assert res.json()["from"] is None and res.json()["to"] == SCHEMA_REVISION
    again = cli("db", "upgrade", "--json").json()
    assert again["changed"] is False
    status = cli("db", "status", "--json").json()
    assert status["up_to_date"] is True and status["current"] == SCHEMA_REVISION


def test_db_upgrade_on_a_server_store(tmp_path: Path, postgres_url: str) -> None:
    cli = CLI(tmp_path, HOLON_DATABASE_URL=postgres_url, HOLON_SECRET_KEY="x" * 43 + "=")
    refused = cli("agents", "list", "--json")
    assert refused.code == 3
    assert refused.json()["error"]["code"] == "schema_mismatch"
    assert "holon db upgrade" in refused.json()["error"]["details"]["hint"]
    upgraded = cli("db", "upgrade", "--json")
    assert upgraded.code == 0 and upgraded.json()["changed"] is True
    assert cli("agents", "list", "--json").json() == {"items": [], "next_cursor": None}


def test_an_unreachable_store_exits_3(tmp_path: Path) -> None:
    cli = CLI(tmp_path, HOLON_DATABASE_URL="postgresql+psycopg://x@127.0.0.1:1/none")
    res = cli("agents", "list")
    assert res.code == 3 and "cannot reach the store" in res.stderr


def test_the_next_page_hint_never_shows_a_token() -> None:
    import io

    from gateway.cli._context import Context
    from gateway.cli._output import Output

    err = io.StringIO()
    argv = ["agents", "list", "--token", "hol_secret1", "--org", "acme corp", "--token=hol_x"]
    ctx = Context(
        Settings.from_env({}),
        argparse.Namespace(),
        Output(stdout=io.StringIO(), stderr=err),
        io.StringIO(),
        argv=argv,
    )
    ctx.more("c2")
    assert err.getvalue().strip() == "more: holon agents list --org 'acme corp' --cursor c2"


def test_home_flag_wins_over_holon_home_before_or_after_the_command(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "env-home")
    manifest = str(ROOT / "examples" / "agents" / "acme-ticket-triage.yaml")
    flag = str(tmp_path / "flag-home")
    assert cli("--home", flag, "agents", "register", manifest).code == 0
    listed = cli("agents", "list", "--json", "--home", flag).json()["items"]
    assert [a["id"] for a in listed] == ["acme/ticket-triage"]
    assert cli("agents", "list", "--json").json()["items"] == []  # HOLON_HOME's store
    (home,) = [
        s for s in cli("config", "--json", "--home", flag).json()["settings"] if s["name"] == "home"
    ]
    assert (home["value"], home["source"]) == (flag, "--home")
    empty = cli("--home", " ", "agents", "list")
    assert empty.code == 2 and "--home needs a directory" in empty.stderr
