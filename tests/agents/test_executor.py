"""The Executor's own contracts: the address guard hook, loop binding, and faults below HTTP."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest

from agents import CallLimits, Executor
from schema.errors import Refused
from tests.agents.conftest import Faults, make_agent
from tests.agents.faults import raw_server

pytestmark = pytest.mark.anyio


async def test_resolve_guard_sees_host_and_port_before_connecting(faults: Faults) -> None:
    seen: list[tuple[str, int]] = []

    async def guard(host: str, port: int) -> None:
        seen.append((host, port))

    async with Executor(resolve_guard=guard) as executor:
        assert (await executor.execute(faults.agent("ok"), "echo", {}, CallLimits())).ok
        await executor.identify(faults.agent("honest"))
    port = int(faults.url.rsplit(":", 1)[1])
    assert seen == [("127.0.0.1", port), ("127.0.0.1", port)]


async def test_resolve_guard_refusal_propagates_and_nothing_is_sent(faults: Faults) -> None:
    async def guard(host: str, port: int) -> None:
        raise Refused(f"{host} is a private address")

    async with Executor(resolve_guard=guard) as executor:
        with pytest.raises(Refused):
            await executor.execute(faults.agent("ok"), "echo", {}, CallLimits())
        with pytest.raises(Refused):
            await executor.identify(faults.agent("honest"))
    assert faults.recorder.requests == []


async def test_default_ports_are_given_to_the_guard() -> None:
    seen: list[tuple[str, int]] = []

    async def guard(host: str, port: int) -> None:
        seen.append((host, port))
        raise Refused("no")

    async with Executor(resolve_guard=guard) as executor:
        for url in ("http://agent.invalid/x", "https://agent.invalid/x"):
            with pytest.raises(Refused):
                await executor.execute(make_agent(url), "echo", {}, CallLimits())
    assert seen == [("agent.invalid", 80), ("agent.invalid", 443)]


async def test_guard_is_not_consulted_for_in_process_agents() -> None:
    async def guard(host: str, port: int) -> None:
        raise AssertionError("no connection is made")

    async with Executor(resolve_guard=guard) as executor:
        agent = make_agent("asgi:tests.agents.asgi_apps:app", protocol="asgi")
        assert (await executor.execute(agent, "echo", {}, CallLimits())).ok


def test_an_executor_belongs_to_one_event_loop(faults: Faults) -> None:
    executor = Executor()
    agent = faults.agent("ok")
    loop = asyncio.new_event_loop()
    try:
        assert loop.run_until_complete(executor.execute(agent, "echo", {}, CallLimits())).ok
        with pytest.raises(RuntimeError, match="event loop"):
            asyncio.run(executor.execute(agent, "echo", {}, CallLimits()))
    finally:
        loop.run_until_complete(executor.aclose())
        loop.close()


async def test_tls_failure_is_unreachable(executor: Executor, faults: Faults) -> None:
    # An https URL at a plain HTTP server: the TLS handshake fails.
    agent = make_agent(faults.url.replace("http://", "https://") + "/ok")
    outcome = await executor.execute(agent, "echo", {}, CallLimits(timeout_s=5))
    assert outcome.code == "unreachable", outcome
    assert faults.recorder.requests == []


@pytest.fixture
def full_backlog() -> Iterator[int]:
    """A listening port whose accept queue is full, so new connections hang in SYN."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield port
    finally:
        for filler in fillers:
            filler.close()
        server.close()


async def test_connect_timeout_is_unreachable_not_timeout(
    executor: Executor, full_backlog: int
) -> None:
    agent = make_agent(f"http://127.0.0.1:{full_backlog}/")
    limits = CallLimits(timeout_s=5, connect_timeout_s=0.2)
    outcome = await executor.execute(agent, "echo", {}, limits)
    assert outcome.code == "unreachable", outcome
    assert "timeout" in (outcome.error or "").lower()


async def test_oversized_response_headers_are_invalid_response(executor: Executor) -> None:
    head = b"HTTP/1.1 200 OK\r\nX-Junk: " + b"j" * 20_000 + b"\r\nContent-Length: 2\r\n\r\n{}"
    with raw_server([head]) as (url, _):
        outcome = await executor.execute(make_agent(url), "echo", {}, CallLimits(timeout_s=5))
    assert outcome.code == "invalid_response", outcome
