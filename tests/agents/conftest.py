"""Shared fixtures for the executor tests: fault agents on loopback, an executor, manifests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from decimal import Decimal

import pytest

from agents import AgentLimits, Executor, Manifest, Pricing
from tests._servers import free_port, serve
from tests.agents import openai_server
from tests.agents.faults import Recorder, fault_app


@dataclass
class Faults:
    url: str
    recorder: Recorder

    def agent(self, behaviour: str, **kwargs: object) -> Manifest:
        return make_agent(f"{self.url}/{behaviour}", **kwargs)  # type: ignore[arg-type]


def make_agent(
    endpoint: str,
    *,
    protocol: str = "holon-http",
    pricing: Pricing | None = None,
    limits: AgentLimits | None = None,
    version: str = "1.0.0",
) -> Manifest:
    return Manifest(
        id="acme/faulty",
        version=version,
        protocol=protocol,  # type: ignore[arg-type]
        endpoint=endpoint,
        capabilities=("echo",),
        limits=limits or AgentLimits(max_cost_usd=Decimal("0.05"), timeout_s=Decimal(20)),
        pricing=pricing,
    )


def closed_port() -> int:
    """A loopback port with nothing listening (bound, then released)."""
    return free_port()


@pytest.fixture(scope="session")
def _fault_server() -> Iterator[Faults]:
    recorder = Recorder()
    with serve(fault_app(recorder)) as url:
        yield Faults(url, recorder)


@pytest.fixture
def faults(_fault_server: Faults) -> Faults:
    _fault_server.recorder.reset()
    return _fault_server


@pytest.fixture
def server(
    _server: tuple[str, openai_server.Recorder],
) -> tuple[str, openai_server.Recorder]:
    """The module's loopback OpenAI-compatible server (its `_server` fixture), its record of
    requests cleared for each test."""
    _server[1].reset()
    return _server


@pytest.fixture
async def executor() -> AsyncIterator[Executor]:
    async with Executor() as ex:
        yield ex
