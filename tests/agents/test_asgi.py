"""In-process (`asgi:`) agents: same HTTP semantics, cached import, load failures as outcomes."""

from __future__ import annotations

import pytest

from agents import CallLimits, Executor, build_request
from schema.errors import Refused
from tests.agents import asgi_apps
from tests.agents.conftest import make_agent

pytestmark = pytest.mark.anyio


def asgi_agent(attribute: str, module: str = "tests.agents.asgi_apps"):  # type: ignore[no-untyped-def]
    return make_agent(f"asgi:{module}:{attribute}", protocol="asgi")


async def test_asgi_agent_answers_with_lifespan_state(executor: Executor) -> None:
    outcome = await executor.execute(asgi_agent("app"), "echo", {"n": 1}, CallLimits())
    assert outcome.ok, outcome
    assert outcome.output["echo"] == {"n": 1}
    assert outcome.output["greeting"] == "hello from lifespan"
    assert outcome.http_status == 200 and outcome.usage is not None


async def test_asgi_app_is_imported_and_started_once_per_endpoint() -> None:
    asgi_apps.EVENTS.clear()
    async with Executor() as executor:
        for _ in range(3):
            assert (await executor.execute(asgi_agent("app"), "echo", {}, CallLimits())).ok
        assert asgi_apps.EVENTS == ["startup"]
    assert asgi_apps.EVENTS == ["startup", "shutdown"]  # aclose ran the lifespan shutdown


async def test_asgi_sees_the_same_request_as_over_http(executor: Executor) -> None:
    agent = asgi_agent("app")
    outcome = await executor.execute(agent, "echo", {}, CallLimits(), request_id="rid-asgi")
    assert outcome.ok
    received = outcome.output["headers"]
    prepared = build_request(
        agent,
        "echo",
        {},
        request_id="rid-asgi",
        secret=None,
        traceparent=received["traceparent"],  # each call's own (agents._trace)
    )
    assert {k: received[k.lower()] for k in prepared.headers} == prepared.headers
    assert set(received) - {k.lower() for k in prepared.headers} == {"host", "content-length"}


async def test_app_without_lifespan_support_still_works(executor: Executor) -> None:
    outcome = await executor.execute(asgi_agent("no_lifespan_app"), "echo", {}, CallLimits())
    assert outcome.ok and outcome.output == "bare"


async def test_app_exception_is_a_500_agent_error(executor: Executor) -> None:
    outcome = await executor.execute(asgi_agent("raising_app"), "echo", {}, CallLimits())
    assert outcome.code == "agent_error" and outcome.http_status == 500


async def test_app_breaking_the_asgi_contract_is_invalid_response(executor: Executor) -> None:
    outcome = await executor.execute(asgi_agent("incomplete_app"), "echo", {}, CallLimits())
    assert outcome.code == "invalid_response", outcome


@pytest.mark.parametrize(
    ("endpoint", "reason"),
    [
        ("asgi:tests.agents.no_such_module:app", "cannot import 'tests.agents.no_such_module'"),
        ("asgi:tests.agents.asgi_broken:app", "broken at import time"),
        ("asgi:tests.agents.asgi_apps:missing", "has no attribute 'missing'"),
        ("asgi:tests.agents.asgi_apps:not_an_app", "not an ASGI application"),
        ("asgi:tests.agents.asgi_apps", "not 'asgi:package.module:attribute'"),
        ("asgi:tests.agents.asgi_apps:failing_startup_app", "lifespan startup failed"),
    ],
)
async def test_load_failure_is_unreachable_not_an_exception(
    executor: Executor, endpoint: str, reason: str
) -> None:
    agent = make_agent(endpoint, protocol="asgi")
    outcome = await executor.execute(
        agent, "echo", {}, CallLimits(unreachable_retries=1, retry_backoff_s=0.01)
    )
    assert outcome.code == "unreachable"
    assert reason in (outcome.error or ""), outcome.error
    assert outcome.attempt_count == 2
    assert len(outcome.error or "") <= 300


async def test_asgi_refused_when_not_allowed() -> None:
    async with Executor(allow_asgi=False) as executor:
        with pytest.raises(Refused):
            await executor.execute(asgi_agent("app"), "echo", {}, CallLimits())
        with pytest.raises(Refused):
            await executor.identify(asgi_agent("app"))


async def test_module_level_execute_uses_a_temporary_executor() -> None:
    from agents import execute

    outcome = await execute(asgi_agent("app"), "echo", {"n": 2}, CallLimits())
    assert outcome.ok and outcome.output["echo"] == {"n": 2}
    with pytest.raises(Refused):
        await execute(asgi_agent("app"), "echo", {}, CallLimits(), allow_asgi=False)
