"""Every "store or gateway" command through `--gateway URL`: the same output as on the store.

The gateway is real (uvicorn on 127.0.0.1) and serves the same store the
store-side CLI opens, so the two can be diffed at the same moment. The
gateway-side CLI gets a HOLON_HOME of its own, and never creates a store in it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from gateway.service import StoreService
from gateway.settings import Settings
from records import new_key
from tests._servers import free_port, start_gateway, wait_healthy
from tests.gateway._cli import CLI, FINANCE_MANDATE, TRIAGE, Result, add_triage
from tests.gateway.server._gateway import Gateway, running_gateway

TICKET = '{"subject": "Refund please", "body": "I was charged twice."}'
AGENT = ("--agent", "acme/ticket-triage", "--capability", "ticket.classify")

MANDATE = FINANCE_MANDATE + "min_eval_score: 0.4\n"

REMOTE = """\
schema_version: 1
id: acme/{name}
version: 1.0.0
protocol: holon-http
endpoint: http://127.0.0.1:1/agent
capabilities: [ticket.classify]
"""


@dataclass
class World:
    store: CLI  # the CLI on the store, as operator
    gateway: Gateway
    client_home: Path
    files: Path

    def via(self, role: str | None, **env: str) -> CLI:
        """The CLI through the gateway with `role`'s token (None: no token)."""
        token = {} if role is None else {"HOLON_TOKEN": self.gateway.token(role)}
        return CLI(self.client_home, HOLON_GATEWAY_URL=self.gateway.url, **token, **env)


@contextmanager
def world(root: Path, database_url: str | None = None) -> Iterator[World]:
    """A tiny suite, the triage agent and an unreachable one, and a gateway over that store."""
    home = root / "home"
    env: dict[str, str] = {}
    if database_url is not None:
        env = {"HOLON_DATABASE_URL": database_url, "HOLON_SECRET_KEY": new_key().decode()}
    cli = CLI(home, **env)
    if database_url is not None:
        assert cli("db", "upgrade").code == 0
    add_triage(cli, root, 4, holdout_wrong=2)
    down = root / "down.yaml"
    down.write_text(REMOTE.format(name="down"))
    assert cli("agents", "register", str(down)).code == 0
    settings = Settings.from_env({"HOLON_HOME": str(home), "HOLON_EXAMPLES": "off", **env})
    store = StoreService.from_settings(settings).store
    try:
        with running_gateway(store, home) as gateway:
            yield World(cli, gateway, root / "client-home", root)
    finally:
        store.close()
    assert not (root / "client-home" / "holon.db").exists()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One world for the tests that do not diff the two sides (SQLite)."""
    with world(tmp_path_factory.mktemp("gateway-cli")) as w:
        mandate = w.files / "mandate.yaml"
        mandate.write_text(MANDATE.replace("min_eval_score: 0.4\n", ""))
        assert w.store("mandates", "grant", str(mandate)).code == 0
        yield w


def _same(store: Result, gateway: Result) -> Any:
    assert (store.code, store.stdout) == (gateway.code, gateway.stdout), gateway.stderr
    return store.json() if store.stdout.startswith("{") else store.stdout


def _without(view: dict[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in view.items() if k not in keys}


# -- the same output either way -------------------------------------------------------------


@pytest.mark.slow
def test_the_gateway_gives_the_stores_output(store_url: str, tmp_path: Path) -> None:
    with world(tmp_path, store_url) as w:
        store, op = w.store, w.via("operator")

        # The main job: plan, confirm, run (in the gateway's workers), record.
        here = store("eval", "acme/ticket-triage", "--yes", "--json")
        there = op("eval", "acme/ticket-triage", "--yes", "--json")
        assert here.code == there.code == 1, there.stderr  # 0.5 is below the threshold 0.8
        a, b = here.json(), there.json()
        assert a["plan"] == b["plan"]
        same = ("agent", "agent_version", "status", "full_plan", "plan_digest", "cells")
        assert {k: a["eval"][k] for k in same} == {k: b["eval"][k] for k in same}
        assert (
            a["eval"]["progress"]
            == b["eval"]["progress"]
            == {
                "pending": 0,
                "running": 0,
                "done": 8,
            }
        )
        assert set(a["eval"]) == set(b["eval"])
        assert a["eval"]["summary"]["outcomes"] == b["eval"]["summary"]["outcomes"]
        assert a["eval"]["summary"]["cost_usd"] == b["eval"]["summary"]["cost_usd"]
        for key in ("eval_score", "eval_score_ci95", "suites", "weakest_suite"):
            assert a["eval"]["record"][key] == b["eval"]["record"][key], key
        first, second = a["eval"]["id"], b["eval"]["id"]

        # Reads, at the same moment on the same store: byte for byte.
        for argv in (
            ("agents", "list"),
            ("agents", "show", "acme/ticket-triage"),
            ("suites", "list"),
            ("suites", "show", "tiny"),
            ("records", "show", "acme/ticket-triage"),
            ("evals", "list", "--agent", "acme/ticket-triage", "--limit", "1"),
            ("evals", "status", first),
            ("evals", "resume", first),
        ):
            _same(store(*argv, "--json"), op(*argv, "--json"))
        for argv in (
            ("agents", "show", "acme/ticket-triage"),
            ("records", "show", "acme/ticket-triage"),
            ("evals", "list"),
            ("evals", "report", first, "--json"),
            ("evals", "report", first, "--format", "md"),
            ("evals", "report", first, "--format", "html", "--audience", "operator"),
            ("evals", "compare", first, second, "--json"),
            ("evals", "compare", first, second),
        ):
            _same(store(*argv), op(*argv))

        # Mandates granted through the gateway, read either way.
        mandate = tmp_path / "mandate.yaml"
        mandate.write_text(MANDATE)
        granted = op("mandates", "grant", str(mandate), "--json")
        assert granted.code == 0 and granted.json()["status"] == "created"
        for argv in (
            ("mandates", "list"),
            ("mandates", "list", "--all", "--caller", "finance-bot"),
            ("mandates", "show", "finance-tickets"),
            ("mandates", "check", "finance-tickets", *AGENT),
        ):
            _same(store(*argv, "--json"), op(*argv, "--json"))
        _same(store("mandates", "list"), op("mandates", "list"))
        assert store("mandates", "grant", str(mandate), "--json").json()["status"] == "unchanged"

        # A live call: the caller's token over the gateway, --caller on the store.
        call = ("invoke", "acme/ticket-triage", "--capability", "ticket.classify")
        caller = w.via("caller:finance-bot")
        here = store(*call, "--input", TICKET, "--caller", "finance-bot", "--json")
        there = caller(*call, "--input", TICKET, "--json")
        assert here.code == there.code == 0, there.stderr
        varying = ("request_id", "latency_ms")
        assert _without(here.json(), *varying) == _without(there.json(), *varying)
        routed = ("invoke", "--capability", "ticket.classify", "--input", TICKET, "--json")
        here = store(*routed, "--caller", "finance-bot")
        there = caller(*routed)
        assert _without(here.json(), *varying) == _without(there.json(), *varying)

        # The ledger: a caller reads its own rows, as the operator reads them for it. The
        # gateway settles a call's row just after its answer: compared once every row is.
        def settled() -> bool:
            rows = store("ledger", "--caller", "finance-bot", "--json").json()["items"]
            return all(row["status"] != "reserved" for row in rows)

        deadline = time.monotonic() + 30
        while not settled():
            assert time.monotonic() < deadline, "the gateway's calls were not settled"
            time.sleep(0.1)
        _same(store("ledger", "--caller", "finance-bot", "--json"), caller("ledger", "--json"))
        _same(store("ledger", "--caller", "finance-bot"), caller("ledger"))
        limited = ("ledger", "--decision", "allow", "--limit", "1", "--json")
        _same(store(*limited), op(*limited))


# -- roles, tokens and reaching the gateway ---------------------------------------------------


@pytest.mark.slow
def test_tokens_and_roles(shared: World) -> None:
    w = shared
    missing = w.via(None)("agents", "list")
    assert missing.code == 2
    assert "needs a token" in missing.stderr and "holon tokens create" in missing.stderr

    bogus = w.via(None, HOLON_TOKEN="hol_not-a-real-token")("agents", "list", "--json")
    assert bogus.code == 2 and bogus.json()["error"]["code"] == "unauthorized"
    mangled = w.via(None, HOLON_TOKEN="two words")("agents", "list")
    assert mangled.code == 2 and "not a holon token" in mangled.stderr

    forbidden = w.via("caller:finance-bot")("mandates", "list")
    assert forbidden.code == 2 and "may not use this route" in forbidden.stderr
    # An org evaluates its own agents only (tests/gateway/console/test_org_evals.py).
    by_other = w.via("org:other")("eval", "acme/ticket-triage", "--yes", "--json")
    assert by_other.code == 2 and by_other.json()["error"]["code"] == "forbidden"
    org_denied = w.via("org:other")("records", "show", "acme/ticket-triage", "--json")
    assert org_denied.code == 2 and org_denied.json()["error"]["code"] == "forbidden"

    # The options on the command line do what the variables do.
    flags = CLI(w.client_home)(
        "agents", "list", "--gateway", w.gateway.url, "--token", w.gateway.token("operator"),
        "--json",
    )  # fmt: skip
    assert flags.code == 0 and {a["id"] for a in flags.json()["items"]} >= {"acme/ticket-triage"}
    # Before the command, as docs/gateway.md shows them: the same answer.
    token_file = w.files / "operator.token"
    token_file.write_text(w.gateway.token("operator") + "\n")
    before = CLI(w.client_home)(
        "--gateway", w.gateway.url, "--token-file", str(token_file), "agents", "list", "--json"
    )
    assert before.code == 0 and before.json() == flags.json()
    # Given on both sides with two values: refused, not one of them silently.
    clash = CLI(w.client_home)(
        "--gateway", w.gateway.url, "agents", "list", "--gateway", "http://127.0.0.1:9", "--json"
    )
    assert clash.code == 2 and "--gateway is given twice" in clash.json()["error"]["message"]


def test_an_unreachable_gateway_is_an_environment_error(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # a port nobody listens on
    cli = CLI(tmp_path, HOLON_GATEWAY_URL=url, HOLON_TOKEN="t")
    res = cli("agents", "list")
    assert res.code == 3 and f"cannot reach the gateway at {url}" in res.stderr
    assert cli("ledger", "--json").json()["error"]["code"] == "gateway_unreachable"
    assert CLI(tmp_path, HOLON_GATEWAY_URL="ftp://x", HOLON_TOKEN="t")("agents", "list").code == 2
    assert not (tmp_path / "holon.db").exists()


def test_commands_without_a_gateway_refuse_the_flag_before_them(tmp_path: Path) -> None:
    res = CLI(tmp_path)("--gateway", "http://127.0.0.1:9", "fixtures", "list", "--json")
    assert res.code == 2
    assert res.json()["error"]["message"].endswith("--gateway is not taken by this command")


@pytest.mark.parametrize(
    "argv",
    [
        ("suites", "add", "somewhere"),
        ("suites", "activate", "tiny", "1"),
        ("suites", "rotate-holdout", "tiny"),
        ("suites", "exposure", "tiny"),
        ("suites", "exposure-reset", "tiny", "--org", "acme", "--reason", "r"),
        ("worker", "--once"),
        ("gateway", "serve"),
    ],
)
def test_store_only_commands_refuse_a_gateway(tmp_path: Path, argv: tuple[str, ...]) -> None:
    cli = CLI(tmp_path, HOLON_GATEWAY_URL="http://127.0.0.1:9", HOLON_TOKEN="t")
    res = cli(*argv)
    assert res.code == 2 and "works on the store only" in res.stderr


# -- each command group through the gateway --------------------------------------------------


@pytest.mark.slow
def test_agents_through_the_gateway(shared: World) -> None:
    w = shared
    acme = w.via("org:acme")
    refused = acme("agents", "register", str(TRIAGE), "--json")
    assert refused.code == 2 and "asgi" in refused.json()["error"]["message"]

    remote = w.files / "remote.yaml"
    remote.write_text(REMOTE.format(name="remote"))
    registered = acme("agents", "register", str(remote), "--json")
    assert registered.code == 0 and registered.json()["status"] == "created"
    assert w.via("org:other")("agents", "register", str(remote)).code == 2

    assert acme("agents", "secret", "set", "acme/remote", stdin="s3cret-value\n").code == 0
    shown = acme("agents", "show", "acme/remote", "--json").json()
    assert shown["secret_set"] is True and "s3cret" not in str(shown)
    bad_secret = acme("agents", "secret", "set", "acme/remote", stdin="has space\n")
    assert bad_secret.code == 2
    cleared = acme("agents", "secret", "clear", "acme/remote", "--json")
    assert cleared.code == 0 and cleared.json()["removed"] is True

    assert acme("agents", "disable", "acme/remote").code == 0
    listed = acme("agents", "list", "--org", "acme", "--json").json()["items"]
    assert "acme/remote" not in {a["id"] for a in listed}
    everything = acme("agents", "list", "--org", "acme", "--all", "--json").json()["items"]
    assert "acme/remote" in {a["id"] for a in everything}
    assert w.store("agents", "show", "acme/remote", "--json").json()["disabled"] is True
    assert acme("agents", "enable", "acme/remote").code == 0
    assert acme("agents", "show", "acme/nobody").code == 2


@pytest.mark.slow
def test_invoke_and_ledger_exit_codes_through_the_gateway(shared: World) -> None:
    w = shared
    caller = w.via("caller:finance-bot")
    call = ("--capability", "ticket.classify", "--input", TICKET)
    ok = caller("invoke", "acme/ticket-triage", *call)
    assert ok.code == 0, ok.stderr
    assert '"label":"billing"' in ok.stdout and "under mandate finance-tickets" in ok.stderr

    stranger = w.via("caller:stranger")("invoke", "acme/ticket-triage", *call)
    assert stranger.code == 1 and "no mandate" in stranger.stderr
    failed = caller("invoke", "acme/down", *call, "--json")
    assert failed.code == 3 and failed.json()["error"]["code"] == "unreachable"
    assert caller("invoke", "acme/ticket-triage", *call, "--caller", "finance-bot").code == 2
    operator = w.via("operator")("invoke", "acme/ticket-triage", *call)
    assert operator.code == 2 and "may not use this route" in operator.stderr
    not_claimed = caller("invoke", "acme/ticket-triage", "--capability", "x.y", "--input", "{}")
    assert not_claimed.code == 2

    mine = caller("ledger", "--json").json()["items"]
    assert {r["caller"] for r in mine} == {"finance-bot"}
    assert [r["outcome"] for r in mine[:2]] == ["unreachable", "ok"]
    assert caller("ledger", "--caller", "stranger").code == 2
    everyone = w.via("operator")("ledger", "--decision", "deny", "--json").json()["items"]
    assert "stranger" in {r["caller"] for r in everyone}


@pytest.mark.slow
def test_evals_and_suites_through_the_gateway(shared: World) -> None:
    w = shared
    op = w.via("operator")
    done = op("eval", "acme/ticket-triage", "--yes")
    assert done.code == 1, done.stderr
    assert "record:        written" in done.stdout
    assert "eval: 8/8 done" in done.stderr  # progress, as on the store (plain lines)
    eval_id = op("evals", "list", "--json").json()["items"][0]["id"]
    cancelled = op("evals", "cancel", eval_id)
    assert cancelled.code == 2 and "not running" in cancelled.stderr
    assert op("evals", "status", "ev_nope").code == 2
    assert op("eval", "acme/ticket-triage", "--json").code == 2  # no --yes, no terminal
    expensive = op("eval", "acme/ticket-triage", "--yes", "--max-cost", "0.01")
    assert expensive.code == 2 and "over --max-cost" in expensive.stderr
    assert len(op("evals", "list", "--json").json()["items"]) == 1

    here, there = w.files / "pulled-here", w.files / "pulled-there"
    assert w.store("suites", "pull", "tiny", "-o", str(here)).code == 0
    assert w.via("caller:finance-bot")("suites", "pull", "tiny", "-o", str(there)).code == 0
    files = sorted(p.relative_to(here) for p in here.rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(there) for p in there.rglob("*") if p.is_file())
    assert all((here / f).read_bytes() == (there / f).read_bytes() for f in files)
    assert "holdout" not in " ".join(str(f) for f in files)


# -- holon gateway serve ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("workers", [1, 2])
def test_gateway_serve(tmp_path: Path, workers: int) -> None:
    env = {**os.environ, "HOLON_HOME": str(tmp_path / "home"), "HOLON_EXAMPLES": "off"}
    env.pop("HOLON_GATEWAY_URL", None)
    token = CLI(tmp_path / "home")("tokens", "create", "--role", "operator", "--json")
    server, url = start_gateway(env, "--workers", str(workers), stdout=subprocess.PIPE)
    try:
        wait_healthy(server, url)
        cli = CLI(tmp_path / "client", HOLON_GATEWAY_URL=url, HOLON_TOKEN=token.json()["token"])
        listed = cli("agents", "list", "--json")
        assert listed.code == 0 and listed.json() == {"items": [], "next_cursor": None}
    finally:
        server.send_signal(signal.SIGINT)
        _, stderr = server.communicate(timeout=30)
    assert server.returncode == 0, stderr
    assert f"holon gateway on {url}" in stderr
