"""Hostile addresses (issue 33): endpoints written in forms the C resolver reads as numbers,
and `holon worker` under the network policy.

The red team registered `http://0177.0.0.1:PORT/` (octal: 127.0.0.1 to `getaddrinfo`) and
`http://010.0.0.1/` (8.0.0.1) on a `public` gateway: the first was refused only by luck of
the lookup, the second accepted, and a call, an eval or a probe of either then died in the
HTTP client's URL parser (a 500). Every door now refuses them with the manifest's error at
`$.endpoint`, and an agent stored before that rule is refused cleanly wherever it is called.

`holon worker` works evals anyone created through the API: it holds to
HOLON_AGENT_NETWORKS like the gateway, so a name that answered a permitted address to the
gateway's probe and rebinds to a forbidden one for the worker's cells reaches nothing.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import aiohttp
import pytest

from evals import make_plan, probe, start
from gateway._network import NetworkPolicy
from gateway.service import StoreService
from gateway.settings import Settings
from records import Store
from tests._servers import serve
from tests.faults._campaign import TALLY
from tests.faults._dns import ALLOWED, FORBIDDEN, ScriptedResolver, tripwire
from tests.gateway._cli import CLI
from tests.gateway.server._agent import Recording, manifest, recording_agent
from tests.gateway.server._gateway import install_tiny, mandate, running_gateway

BODY = {"capability": "ticket.classify", "input": {"subject": "Refund please"}}
# The red team's forms; the port is the tripwire's, where 127.0.0.1 answers.
RED_TEAM = ["0177.0.0.1", "010.0.0.1", "0x7f.1", "127.1", "2130706433", "[fe80::1%25lo]"]


@contextmanager
def _cli_store(tmp_path: Path, **env: str) -> Iterator[tuple[CLI, Store]]:
    """The CLI's embedded store, opened here too (what an operator's earlier version stored)."""
    cli = CLI(tmp_path / "home", **env)
    service = StoreService.from_settings(Settings.from_env(cli.env))
    try:
        install_tiny(service.store, tmp_path)
        yield cli, service.store
    finally:
        service.store.close()


def test_the_api_refuses_every_numeric_form(store: Store, tmp_path: Path) -> None:
    with (
        tripwire() as wire,
        running_gateway(store, tmp_path / "home", {"HOLON_AGENT_NETWORKS": "public"}) as gw,
    ):
        for index, host in enumerate(RED_TEAM):
            url = f"http://{host}:{wire.port}"
            answer = gw.call("POST", "/v1/agents", "org:acme", json=manifest(f"acme/a{index}", url))
            assert answer.status_code == 422, (host, answer.text)
            error = answer.json()["error"]
            assert error["code"] == "invalid_manifest", error
            assert error["details"]["path"] == "$.endpoint" and "expected" in error["message"]
            TALLY["addresses: API registrations refused"] += 1
    assert wire.accepted == 0 and store.agents.list().items == []


def test_the_cli_refuses_them_with_file_line_and_path(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home")
    for host in RED_TEAM:
        path = tmp_path / "agent.yaml"
        path.write_text(
            "schema_version: 1\nid: acme/octal\nversion: 1.0.0\nprotocol: holon-http\n"
            f"endpoint: http://{host}:8080/agent\ncapabilities: [ticket.classify]\n"
        )
        result = cli("agents", "register", str(path))
        assert result.code == 2, (host, result.stderr)
        assert f"{path}:5" in result.stderr and "endpoint" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
        TALLY["addresses: CLI registrations refused"] += 1


@pytest.mark.parametrize("host", ["0177.0.0.1", "010.0.0.1"])
def test_an_agent_stored_before_the_rule_is_refused_cleanly(
    store: Store, tmp_path: Path, host: str
) -> None:
    """Live calls and `POST /v1/evals` on an agent already stored with such an endpoint: a
    clean refusal, never a 5xx, and nothing dialled."""
    install_tiny(store, tmp_path)
    store.mandates.grant(mandate())
    with tripwire() as wire:
        store.agents.register(manifest("acme/octal", f"http://{host}:{wire.port}"))
        env = {"HOLON_AGENT_NETWORKS": "public"}
        with running_gateway(store, tmp_path / "home", env, eval_workers=0) as gw:
            call = gw.call("POST", "/v1/agents/acme/octal/invoke", "caller:finance-bot", json=BODY)
            assert 400 <= call.status_code < 500, call.text
            assert "endpoint" in call.json()["error"]["message"]
            started = gw.call("POST", "/v1/evals", "operator", json={"agent": "acme/octal"})
            assert 400 <= started.status_code < 500, started.text
            assert "endpoint" in started.json()["error"]["message"]
    assert wire.accepted == 0
    TALLY["addresses: stored agents refused cleanly"] += 1


def test_the_identity_probes_refuse_it_and_go_on(store: Store, tmp_path: Path) -> None:
    """The gateway's background probes meet the stored agent: `refused`, and the next agent
    is still probed (the red team's probe died on it)."""
    recording = Recording()
    with tripwire() as wire, serve(recording_agent("acme/zz-honest", "1.0.0", recording)) as url:
        store.agents.register(manifest("acme/octal", f"http://0177.0.0.1:{wire.port}"))
        store.agents.register(manifest("acme/zz-honest", url))
        env = {"HOLON_AGENT_NETWORKS": "any", "HOLON_PROBE_INTERVAL_S": "1"}
        with running_gateway(store, tmp_path / "home", env, eval_workers=0) as gw:
            deadline = time.monotonic() + 30
            while recording.probes < 2:  # a second round: the loop outlived the bad agent
                assert time.monotonic() < deadline, "the probes stopped"
                time.sleep(0.05)
            metrics = gw.call("GET", "/metrics", "operator").text
    assert 'holon_agent_probes_total{agent="acme/octal",result="refused"}' in metrics
    assert wire.accepted == 0
    TALLY["addresses: stored agents refused cleanly"] += 1


def test_holon_eval_on_an_agent_stored_before_the_rule_exits_2(tmp_path: Path) -> None:
    with tripwire() as wire, _cli_store(tmp_path) as (cli, store):
        store.agents.register(manifest("acme/octal", f"http://0177.0.0.1:{wire.port}"))
        result = cli("eval", "acme/octal", "--yes")
        assert result.code == 2, result.stderr
        assert "endpoint" in result.stderr and "Traceback" not in result.stderr
    assert wire.accepted == 0


def test_the_worker_holds_to_the_policy_when_a_name_rebinds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The gateway's probe found the name at the permitted address; for the worker's cells it
    answers the tripwire's. The worker refuses every cell and dials nothing forbidden."""
    answers = {"now": [ALLOWED]}
    names = ScriptedResolver(lambda _: list(answers["now"]))
    # Every executor's base resolver (the probe's and the worker's): the scripted one.
    monkeypatch.setattr(aiohttp, "ThreadedResolver", lambda: names)
    recording = Recording()
    policy = f"{ALLOWED}/32"
    with tripwire() as wire, _cli_store(tmp_path, HOLON_AGENT_NETWORKS=policy) as (cli, store):
        app = recording_agent("acme/named", "1.0.0", recording)
        with serve(app, host=ALLOWED, port=wire.port):
            store.agents.register(manifest("acme/named", f"http://agent.test:{wire.port}"))
            plan = make_plan(store, "acme/named", home=tmp_path / "home")
            # What `POST /v1/evals` does on the gateway: the probe under its policy, then start.
            probe(store, plan, address_guard=NetworkPolicy.from_setting(policy).judge)
            info = start(store, plan)
            assert recording.probes == 1
            answers["now"] = [FORBIDDEN]
            result = cli("worker", "--once", "--json", "--poll", "0.05")
            assert "Traceback" not in result.stderr
            assert store.evals.counts(info.id)["done"] == 0
    assert wire.accepted == 0
    assert recording.calls == []
    assert len(names.lookups) >= 2 and names.lookups[-1][1] == [FORBIDDEN]
    TALLY["addresses: worker cells refused under rebinding"] += 1
