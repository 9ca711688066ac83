"""The Executor's own contracts: the address guard hook, loop binding, and faults below HTTP."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterator, Sequence

import pytest
from aiohttp.abc import AbstractResolver, ResolveResult

from agents import Address, CallLimits, Executor
from schema.errors import Refused
from tests.agents.conftest import Faults, make_agent
from tests.agents.faults import raw_server

pytestmark = pytest.mark.anyio


class Guard:
    """An address guard that records what it judged and refuses what `refuse` says."""

    def __init__(self, refuse: bool = False) -> None:
        self.refuse = refuse
        self.seen: list[tuple[str, int, list[str]]] = []

    def __call__(self, host: str, port: int, addresses: Sequence[Address]) -> None:
        self.seen.append((host, port, [str(a) for a in addresses]))
        if self.refuse:
            raise Refused(f"{host} is a private address")


class Names(AbstractResolver):
    """A resolver that answers every name with `answers` (an OSError for a name it lacks)."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        self.asked.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            ResolveResult(hostname=host, host=a, port=port, family=socket.AF_INET, proto=0, flags=0)
            for a in self.answers[host]
        ]

    async def close(self) -> None:
        pass


async def test_the_guard_judges_every_connection_before_it_is_dialled(faults: Faults) -> None:
    guard = Guard()
    port = int(faults.url.rsplit(":", 1)[1])
    names = Names({"agent.test": ["127.0.0.1"]})
    async with Executor(address_guard=guard, resolver=names) as executor:
        assert (await executor.execute(faults.agent("ok"), "echo", {}, CallLimits())).ok
        named = make_agent(f"http://agent.test:{port}/ok")
        assert (await executor.execute(named, "echo", {}, CallLimits())).ok
        await executor.identify(faults.agent("honest"))
    assert guard.seen == [
        ("127.0.0.1", port, ["127.0.0.1"]),  # a literal: judged by the transport
        ("agent.test", port, ["127.0.0.1"]),  # a name: by the connector's resolver
        ("127.0.0.1", port, ["127.0.0.1"]),
    ]
    assert names.asked == ["agent.test"]  # one lookup, the one the connection used


async def test_a_refusal_propagates_and_nothing_is_sent(faults: Faults) -> None:
    port = int(faults.url.rsplit(":", 1)[1])
    names = Names({"agent.test": ["127.0.0.1"]})
    async with Executor(address_guard=Guard(refuse=True), resolver=names) as executor:
        for agent in (faults.agent("ok"), make_agent(f"http://agent.test:{port}/ok")):
            with pytest.raises(Refused):
                await executor.execute(agent, "echo", {}, CallLimits())
        with pytest.raises(Refused):
            await executor.identify(faults.agent("honest"))
    assert faults.recorder.requests == []


async def test_a_name_that_does_not_resolve_is_unreachable_never_a_pass(faults: Faults) -> None:
    guard = Guard()
    port = int(faults.url.rsplit(":", 1)[1])
    async with Executor(address_guard=guard, resolver=Names({})) as executor:
        agent = make_agent(f"http://agent.test:{port}/ok")
        outcome = await executor.execute(agent, "echo", {}, CallLimits())
        assert outcome.code == "unreachable" and "Name or service not known" in str(outcome.error)
        with pytest.raises(OSError):
            await executor.resolve("agent.test", port)
        assert await executor.resolve("::1", port) == [ipaddress.ip_address("::1")]
    assert guard.seen == [] and faults.recorder.requests == []


async def test_default_ports_are_given_to_the_guard() -> None:
    guard = Guard(refuse=True)
    names = Names({"agent.invalid": ["127.0.0.1"]})
    async with Executor(address_guard=guard, resolver=names) as executor:
        for url in ("http://agent.invalid/x", "https://agent.invalid/x", "http://[::1]/x"):
            with pytest.raises(Refused):
                await executor.execute(make_agent(url), "echo", {}, CallLimits())
    assert guard.seen == [
        ("agent.invalid", 80, ["127.0.0.1"]),
        ("agent.invalid", 443, ["127.0.0.1"]),
        ("::1", 80, ["::1"]),
    ]


async def test_guard_is_not_consulted_for_in_process_agents() -> None:
    def guard(host: str, port: int, addresses: Sequence[Address]) -> None:
        raise AssertionError("no connection is made")

    async with Executor(address_guard=guard) as executor:
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
