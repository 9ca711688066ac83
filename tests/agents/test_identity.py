"""The identity probe: who answers, and the errors that say why nobody (sensible) did."""

from __future__ import annotations

import pytest

from agents import Executor, Identity
from agents._identity import IdentityError
from schema.errors import AgentProtocolError, AgentUnreachable
from tests.agents.conftest import Faults, closed_port, make_agent
from tests.agents.faults import LYING_VERSION, raw_server

pytestmark = pytest.mark.anyio


async def test_probe_returns_the_identity(executor: Executor, faults: Faults) -> None:
    agent = faults.agent("honest")
    identity = await executor.identify(agent, secret="s3cret")
    assert identity == Identity(id="acme/honest", version="1.0.0", capabilities=("echo",))
    assert identity.matches(agent)
    path, headers, _ = faults.recorder.requests[-1]
    assert path == "/honest/.well-known/holon-agent"
    assert (b"authorization", b"Bearer s3cret") in headers


async def test_trailing_slash_endpoint_probes_the_same_path(
    executor: Executor, faults: Faults
) -> None:
    agent = make_agent(f"{faults.url}/honest/")
    assert (await executor.identify(agent)).id == "acme/honest"
    assert faults.recorder.paths()[-1] == "/honest/.well-known/holon-agent"


async def test_an_agent_lying_about_its_version_is_detectable(
    executor: Executor, faults: Faults
) -> None:
    agent = faults.agent("liar")
    identity = await executor.identify(agent)
    assert identity.version == LYING_VERSION != agent.version
    assert not identity.matches(agent)


async def test_bad_identity_document_is_a_protocol_error(
    executor: Executor, faults: Faults
) -> None:
    with pytest.raises(AgentProtocolError) as info:
        await executor.identify(faults.agent("bad-identity"))
    assert "version" in str(info.value)
    assert info.value.details["agent"] == "acme/faulty"


async def test_missing_identity_route_is_a_protocol_error(
    executor: Executor, faults: Faults
) -> None:
    with pytest.raises(AgentProtocolError) as info:
        await executor.identify(make_agent(f"{faults.url}/no/such"))
    assert info.value.details["http_status"] == 404


async def test_5xx_identity_is_unreachable(executor: Executor, faults: Faults) -> None:
    with pytest.raises(AgentUnreachable):
        await executor.identify(faults.agent("identity-500"))


async def test_refused_probe_is_unreachable(executor: Executor) -> None:
    with pytest.raises(AgentUnreachable):
        await executor.identify(make_agent(f"http://127.0.0.1:{closed_port()}"))


async def test_silent_probe_times_out_as_unreachable(executor: Executor) -> None:
    with raw_server(["hang"]) as (url, _):
        with pytest.raises(AgentUnreachable) as info:
            await executor.identify(make_agent(url), timeout_s=0.2)
    assert "within 0.2 s" in str(info.value)


async def test_garbage_probe_is_a_protocol_error(executor: Executor) -> None:
    with raw_server(["garbage"]) as (url, _):
        with pytest.raises(AgentProtocolError):
            await executor.identify(make_agent(url))


async def test_asgi_identity(executor: Executor) -> None:
    agent = make_agent("asgi:tests.agents.asgi_apps:app", protocol="asgi")
    assert await executor.identify(agent) == Identity("acme/inproc", "3.0.0", ("echo",))


async def test_asgi_load_failure_is_unreachable(executor: Executor) -> None:
    agent = make_agent("asgi:tests.agents.asgi_broken:app", protocol="asgi")
    with pytest.raises(AgentUnreachable) as info:
        await executor.identify(agent)
    assert "broken at import time" in str(info.value)


def test_compare_names_a_mismatch_and_what_is_not_advertised() -> None:
    from agents._identity import parse_identity

    agent = make_agent("http://127.0.0.1:1/a")
    right = parse_identity({"id": agent.id, "version": agent.version, "capabilities": ["x"]})
    check = right.compare(agent)
    assert check.mismatch is None and check.not_advertised == tuple(agent.capabilities)
    other = parse_identity({"id": "evil/twin", "version": agent.version, "capabilities": []})
    assert "evil/twin" in str(other.compare(agent).mismatch)
    liar = parse_identity({"id": agent.id, "version": "9" * 5000})
    lied = liar.compare(agent)
    assert lied.mismatch is not None and len(lied.answered_version) == 120
    # Left out, `capabilities` advertises nothing either way: nothing is refused for it.
    assert liar.capabilities is None and lied.not_advertised == ()
    with pytest.raises(IdentityError):
        parse_identity({"id": agent.id, "version": "1", "capabilities": "everything"})
