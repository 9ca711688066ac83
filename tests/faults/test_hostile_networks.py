"""Hostile networks: DNS rebinding, failed lookups and IPv6 forms of private IPv4 addresses.

The policy under test is the gateway's own (`gateway._network.NetworkPolicy`),
as the executor's address guard, against real agents on loopback. A name's
answers come from a scripted resolver (`tests/faults/_dns.py`): the policy
allows 127.0.0.2/32, where the honest agent listens, and a tripwire listens
on 127.0.0.1 at the same port, where a rebinding name points. Whatever the
name answers, and however often it changes its answer, the tripwire must
accept no connection: the addresses the guard judged are the only ones
dialled, a name that answers one forbidden address is refused whole, and a
failed lookup is `unreachable`, never a pass.

IPv6 forms that stand for an IPv4 address are judged by that address at
registration (over the API) and when connecting (by the executor), and their
public counterparts pass.
"""

from __future__ import annotations

import asyncio
import ipaddress
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from agents import Address, CallLimits, Executor, Manifest, manifest_from_dict
from evals import make_plan, start
from gateway._network import NetworkPolicy
from records import Store
from schema.errors import Refused
from tests._servers import serve
from tests.faults._campaign import TALLY
from tests.faults._dns import (
    ALLOWED,
    FORBIDDEN,
    Answer,
    ScriptedResolver,
    Tripwire,
    failed,
    tripwire,
)
from tests.gateway.server._agent import Recording, manifest, recording_agent
from tests.gateway.server._gateway import install_tiny, mandate, running_gateway

PUBLIC = NetworkPolicy.from_setting("public")
POLICY = NetworkPolicy.from_setting(f"{ALLOWED}/32")
NAME = "agent.test"
BODY = {"capability": "ticket.classify", "input": {"subject": "Refund please"}}

# Every form the issue found accepted under `public`, then more of each kind.
FORBIDDEN_FORMS = [
    "::127.0.0.1",  # IPv4-compatible
    "::a9fe:a9fe",
    "64:ff9b::a9fe:a9fe",  # NAT64, well-known prefix
    "64:ff9b:1::a00:1",  # NAT64, local-use prefix (refused whole)
    "2002:a9fe:a9fe::1",  # 6to4
    "::ffff:0:7f00:1",  # IPv4-translated
    "fec0::1",  # site-local
    "::ffff:127.0.0.1",  # IPv4-mapped
    "::ffff:169.254.169.254",
    "::ffff:0:a00:1",
    "::c0a8:101",
    "64:ff9b::7f00:1",
    "64:ff9b::c0a8:101",
    "64:ff9b:1::808:808",
    "2002:7f00:1::1",
    "2002:c0a8:101::1",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
    "2001:0:a00:1:8000:63bf:f7f7:fbfb",  # Teredo, server 10.0.0.1
    "fec0::808:808",
    "3fff::1",
    "5f00::1",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "ff02::1",
    "100::1",
    "2001:db8::1",
    "127.0.0.1",
    "169.254.169.254",
    "10.0.0.1",
    "100.64.0.1",
    "192.0.0.8",
    "0.0.0.0",
    "224.0.0.1",
    "255.255.255.255",
]
PUBLIC_FORMS = [
    "8.8.8.8",
    "2606:4700:4700::1111",
    "::808:808",
    "::ffff:8.8.8.8",
    "::ffff:0:808:808",
    "64:ff9b::808:808",
    "2002:808:808::1",
    "2001:0:4136:e378:8000:63bf:f7f7:fbfb",  # Teredo, server 65.54.227.120, client 8.8.4.4
]
# Forms of 127.0.0.1 (where the tripwire listens), dialled by literal and by name.
LOOPBACK_FORMS = [
    "::ffff:127.0.0.1",
    "::ffff:0:7f00:1",
    "::127.0.0.1",
    "64:ff9b::7f00:1",
    "2002:7f00:1::1",
    "2001:0:4136:e378:8000:63bf:80ff:fffe",
]


def _host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


# -- the forms, judged ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("address", "permitted"),
    [(a, False) for a in FORBIDDEN_FORMS] + [(a, True) for a in PUBLIC_FORMS],
)
def test_an_address_is_judged_by_the_ipv4_it_stands_for(address: str, permitted: bool) -> None:
    assert PUBLIC.permits(ipaddress.ip_address(address)) is permitted
    TALLY["network: address forms judged"] += 1


def test_an_allowed_network_allows_its_ipv6_forms_too() -> None:
    ten = NetworkPolicy.from_setting("10.0.0.0/8")
    for form in ("10.0.0.1", "::ffff:10.0.0.1", "::ffff:0:a00:1", "64:ff9b::a00:1", "2002:a00:1::"):
        assert ten.permits(ipaddress.ip_address(form)), form
    for form in ("::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::a00:1"):
        assert not ten.permits(ipaddress.ip_address(form)), form


def test_registration_over_the_api_judges_every_form(store: Store, tmp_path: Path) -> None:
    with running_gateway(store, tmp_path / "home", {"HOLON_AGENT_NETWORKS": "public"}) as gw:
        for index, address in enumerate(FORBIDDEN_FORMS + PUBLIC_FORMS):
            url = f"http://{_host(address)}:8080"
            answer = gw.call("POST", "/v1/agents", "org:acme", json=manifest(f"acme/a{index}", url))
            if address in PUBLIC_FORMS:
                assert answer.status_code == 201, (address, answer.text)
            else:
                assert answer.status_code == 409, (address, answer.text)
                error = answer.json()["error"]
                assert error["code"] == "refused" and "HOLON_AGENT_NETWORKS" in answer.text
            TALLY["network: registrations judged"] += 1
    # Registration connects to nothing, so the public ones were never dialled.
    assert {a.id for a in store.agents.list().items} == {
        f"acme/a{len(FORBIDDEN_FORMS) + i}" for i in range(len(PUBLIC_FORMS))
    }


@pytest.mark.anyio
async def test_connecting_judges_every_form_by_literal_and_by_name() -> None:
    with tripwire() as wire:
        for address in FORBIDDEN_FORMS:
            names = ScriptedResolver(lambda _, a=address: [a])  # type: ignore[misc]
            async with Executor(address_guard=PUBLIC.judge, resolver=names) as executor:
                port = wire.port if address in LOOPBACK_FORMS else 8080
                for host in (_host(address), NAME):
                    agent = _agent(f"http://{host}:{port}")
                    with pytest.raises(Refused, match="HOLON_AGENT_NETWORKS|may not call"):
                        await executor.execute(agent, "ticket.classify", {}, CallLimits())
                    TALLY["network: connections judged"] += 1
            assert [a for _, a in names.lookups] == [[address]]  # the name: one lookup
    assert wire.accepted == 0


# -- DNS rebinding and failed lookups ------------------------------------------------------


@contextmanager
def _agents() -> Iterator[tuple[Recording, Tripwire]]:
    """The honest agent on 127.0.0.2:port and the tripwire on 127.0.0.1:port."""
    recording = Recording()
    with tripwire() as wire:
        app = recording_agent("acme/named", "1.0.0", recording)
        with serve(app, host=ALLOWED, port=wire.port):
            yield recording, wire


def _agent(url: str) -> Manifest:
    return manifest_from_dict(manifest("acme/named", url))


def _alternating(n: int) -> Answer:
    return [ALLOWED] if n % 2 == 0 else [FORBIDDEN]


def _both_at_once(n: int) -> Answer:
    return [ALLOWED, FORBIDDEN] if n % 2 == 0 else [FORBIDDEN, ALLOWED]


def _fails_then_rebinds(n: int) -> Answer:
    return [failed(), failed(), [FORBIDDEN]][n] if n < 3 else [ALLOWED]


# (script, the registration's status, each call's status, lookups made)
SCRIPTS = {
    # Registration judges lookup 0 (allowed); call 1 gets lookup 1 (forbidden: 409);
    # call 2 gets lookup 2 (allowed) and the connector keeps it (its DNS cache, the pool).
    "rebinding": (_alternating, 201, [409, 200, 200, 200, 200, 200], 3),
    # A name that answers a forbidden address beside a permitted one is refused whole.
    "both at once": (_both_at_once, 409, [409] * 6, 7),
    # An unresolvable name may be registered; calling it is `unreachable`, and when it
    # then resolves somewhere forbidden, refused.
    "failed lookups": (_fails_then_rebinds, 201, [502, 409, 200, 200, 200, 200], 4),
}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_gateway_dials_only_what_it_judged(store: Store, tmp_path: Path, name: str) -> None:
    script, registered, statuses, lookups = SCRIPTS[name]
    resolver = ScriptedResolver(script)
    env = {"HOLON_AGENT_NETWORKS": f"{ALLOWED}/32"}
    with _agents() as (recording, wire):
        url = f"http://{NAME}:{wire.port}"
        store.mandates.grant(mandate())
        with running_gateway(store, tmp_path / "home", env, resolver=resolver) as gw:
            answer = gw.call("POST", "/v1/agents", "org:acme", json=manifest("acme/named", url))
            assert answer.status_code == registered, answer.text
            if registered != 201:
                store.agents.register(manifest("acme/named", url))  # an operator's own choice
            seen = []
            for _ in statuses:
                call = gw.call(
                    "POST", "/v1/agents/acme/named/invoke", "caller:finance-bot", json=BODY
                )
                seen.append(call.status_code)
                if call.status_code == 409:
                    assert call.json()["error"]["code"] == "refused"
                if call.status_code == 502:
                    assert call.json()["error"]["code"] == "unreachable"
    assert wire.accepted == 0  # nothing reached the address the name rebound to
    assert seen == statuses
    assert len(resolver.lookups) == lookups and all(h == NAME for h, _ in resolver.lookups)
    assert len(recording.calls) == statuses.count(200)
    rows = store.ledger.list().items
    assert len(rows) == len(statuses)
    for row in rows:
        if row.outcome_code in ("refused", "unreachable"):
            assert row.status == "settled" and row.cost_usd == 0
        else:
            assert row.outcome_code == "ok" and row.cost_usd > 0
    TALLY["network: hostile DNS trials"] += 1
    TALLY["network: hostile DNS lookups"] += len(resolver.lookups)
    TALLY["network: calls under hostile DNS"] += len(statuses)


# Per lookup: what the name answers, and what must become of the call.
ANSWERS: list[tuple[str, Answer, str]] = [
    ("allowed", [ALLOWED], "ok"),
    ("allowed, mapped", [f"::ffff:{ALLOWED}"], "ok"),
    ("forbidden", [FORBIDDEN], "refused"),
    ("forbidden, mapped", [f"::ffff:{FORBIDDEN}"], "refused"),
    ("forbidden, translated", ["::ffff:0:7f00:1"], "refused"),
    ("allowed and forbidden", [ALLOWED, FORBIDDEN], "refused"),
    ("forbidden and allowed", [FORBIDDEN, ALLOWED], "refused"),
    ("failed", failed(), "unreachable"),
]
CALLS = 64


@pytest.mark.anyio
async def test_a_seeded_mix_of_hostile_answers_never_reaches_the_tripwire() -> None:
    rng = random.Random("hostile-dns")
    plan = [rng.choice(ANSWERS) for _ in range(CALLS)]
    with _agents() as (recording, wire):
        agent = _agent(f"http://{NAME}:{wire.port}")
        for label, answer, expected in plan:
            # A fresh executor per call: a fresh pool and DNS cache, so every call looks up.
            names = ScriptedResolver(lambda _, a=answer: a)  # type: ignore[misc]
            async with Executor(address_guard=POLICY.judge, resolver=names) as executor:
                try:
                    outcome = (
                        await executor.execute(agent, "ticket.classify", {}, CallLimits())
                    ).code
                except Refused:
                    outcome = "refused"
            assert outcome == expected, label
            assert len(names.lookups) == 1, label  # the one lookup the guard judged
            TALLY["network: hostile DNS lookups"] += 1
    assert wire.accepted == 0
    assert len(recording.calls) == sum(1 for _, _, e in plan if e == "ok")
    assert {e for _, _, e in plan} == {"ok", "refused", "unreachable"}
    TALLY["network: hostile DNS trials"] += 1
    TALLY["network: calls under hostile DNS"] += CALLS


# -- the gateway's own evals ---------------------------------------------------------------


def test_the_gateways_evals_are_judged_too(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An eval started over the API probes the agent, and the gateway's eval workers call
    it: both through the network policy, like live calls."""
    install_tiny(store, tmp_path)
    recording = Recording()
    with serve(recording_agent("acme/local", "1.0.0", recording)) as url:  # on 127.0.0.1
        store.agents.register(manifest("acme/local", url))
        env = {"HOLON_AGENT_NETWORKS": "public"}
        with running_gateway(store, tmp_path / "home", env, eval_workers=1) as gw:
            started = gw.call("POST", "/v1/evals", "operator", json={"agent": "acme/local"})
            assert started.status_code == 409, started.text
            assert "may not call" in started.json()["error"]["message"]
            # Started on the store (no probe): the gateway's workers still may not call it.
            info = start(store, make_plan(store, "acme/local", home=tmp_path / "home"))
            deadline = time.monotonic() + 30
            while not any("may not call" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, "the gateway's workers never tried"
                time.sleep(0.05)
            assert store.evals.counts(info.id)["done"] == 0
    assert recording.calls == [] and recording.probes == 0
    TALLY["network: gateway evals judged"] += 1


@pytest.mark.anyio
async def test_registration_lets_an_unresolvable_or_stalled_name_through(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At registration a name that does not resolve (yet) passes; calls to it are judged on
    what it answers then. A name server that stalls is given up on."""
    monkeypatch.setattr("gateway._network.LOOKUP_TIMEOUT_S", 0.05)

    async def stalls(host: str, port: int) -> list[Address]:
        await asyncio.sleep(30)
        raise AssertionError("not reached")

    async def fails(host: str, port: int) -> list[Address]:
        raise failed()

    async def forbidden(host: str, port: int) -> list[Address]:
        return [ipaddress.ip_address(FORBIDDEN)]

    started = time.monotonic()
    await PUBLIC.check_url(f"http://{NAME}/agent", stalls)
    assert time.monotonic() - started < 5
    await PUBLIC.check_url(f"http://{NAME}/agent", fails)
    with pytest.raises(Refused):
        await PUBLIC.check_url(f"http://{NAME}/agent", forbidden)
