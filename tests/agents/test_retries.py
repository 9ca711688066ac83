"""Retries: only `unreachable` is retried, as often as the limits say, with one request id."""

from __future__ import annotations

import anyio
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agents import CallLimits, Executor, Outcome
from tests.agents.conftest import Faults, closed_port, make_agent
from tests.agents.faults import RawLog, raw_server

pytestmark = pytest.mark.anyio


async def test_refused_connection_is_unreachable_and_retried(executor: Executor) -> None:
    agent = make_agent(f"http://127.0.0.1:{closed_port()}/")
    limits = CallLimits(timeout_s=5, unreachable_retries=2, retry_backoff_s=0.01)
    outcome = await executor.execute(agent, "echo", {}, limits, request_id="req-refused-1")
    assert outcome.code == "unreachable"
    assert outcome.attempt_count == 3
    assert [a.number for a in outcome.attempts] == [1, 2, 3]
    assert all(a.code == "unreachable" and a.error for a in outcome.attempts)
    assert outcome.request_id == "req-refused-1"
    # A refused connection is not a timeout (httpx-aiohttp used to report one as such).
    assert "timeout" not in (outcome.error or "").lower()


async def test_no_retry_by_default(executor: Executor) -> None:
    agent = make_agent(f"http://127.0.0.1:{closed_port()}/")
    outcome = await executor.execute(agent, "echo", {}, CallLimits(timeout_s=5))
    assert outcome.code == "unreachable" and outcome.attempt_count == 1


async def test_dns_failure_is_unreachable(executor: Executor) -> None:
    # .invalid never resolves (RFC 2606); no network is needed to fail.
    agent = make_agent("http://agent.invalid/")
    limits = CallLimits(timeout_s=10, connect_timeout_s=3)  # a hung resolver is unreachable too
    outcome = await executor.execute(agent, "echo", {}, limits)
    assert outcome.code == "unreachable"


async def _dropped_twice(executor: Executor, retries: int) -> tuple[Outcome, RawLog]:
    """A call to an agent that drops the first two connections, with `retries` retries;
    what the agent's server saw."""
    with raw_server(["drop", "drop", "ok"]) as (url, log):
        outcome = await executor.execute(
            make_agent(url),
            "echo",
            {},
            CallLimits(timeout_s=5, unreachable_retries=retries, retry_backoff_s=0.01),
        )
    return outcome, log


async def test_retry_after_a_dropped_connection_reuses_the_request_id(executor: Executor) -> None:
    outcome, log = await _dropped_twice(executor, retries=2)
    assert outcome.code == "ok", outcome
    assert outcome.output == {"ok": 1}
    assert [a.code for a in outcome.attempts] == ["unreachable", "unreachable", "ok"]
    ids = log.request_ids()
    assert len(ids) == 3 and set(ids) == {outcome.request_id}
    # One trace, each attempt under a parent id of its own: what the outcome records.
    sent = [_traceparent(head) for head in log.heads]
    assert len({t[:35] for t in sent}) == 1
    assert [t[36:52] for t in sent] == [a.span_id for a in outcome.attempts]
    assert len({a.span_id for a in outcome.attempts}) == 3
    started = [a.started_at for a in outcome.attempts]
    assert all(s and s.endswith("Z") for s in started) and started == sorted(started)


async def test_with_a_tracer_each_attempt_is_a_span(executor: Executor) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with raw_server(["drop", "drop", "ok"]) as (url, log), tracer.start_as_current_span("cell"):
        limits = CallLimits(timeout_s=5, unreachable_retries=2, retry_backoff_s=0.01)
        outcome = await executor.execute(make_agent(url), "echo", {}, limits, tracer=tracer)
    spans = [s for s in exporter.get_finished_spans() if s.name == "agent.attempt"]
    (cell,) = [s for s in exporter.get_finished_spans() if s.name == "cell"]
    assert [f"{s.context.span_id:016x}" for s in spans] == [a.span_id for a in outcome.attempts]
    assert all(s.parent is not None and s.parent.span_id == cell.context.span_id for s in spans)
    assert [s.attributes["holon.outcome"] for s in spans] == ["unreachable", "unreachable", "ok"]  # type: ignore[index]
    assert [_traceparent(h)[36:52] for h in log.heads] == [a.span_id for a in outcome.attempts]
    provider.shutdown()


def _traceparent(head: bytes) -> str:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"traceparent":
            return value.strip().decode()
    raise AssertionError("no traceparent")


async def test_retries_run_out(executor: Executor) -> None:
    outcome, log = await _dropped_twice(executor, retries=1)
    assert outcome.code == "unreachable" and outcome.attempt_count == 2
    assert len(log.heads) == 2


@pytest.mark.parametrize("behaviour", ["error-500", "not-json", "slow"])
async def test_agent_failures_are_not_retried(
    executor: Executor, faults: Faults, behaviour: str
) -> None:
    # The slow agent records the request once it has read the body, in a thread of this
    # process: on a loaded machine (CI, twice) 0.3 s was not always enough for that, and
    # the call gave up before the agent saw it at all.
    timeout = 2.0 if behaviour == "slow" else 0.3
    limits = CallLimits(timeout_s=timeout, unreachable_retries=3, retry_backoff_s=0.01)
    outcome = await executor.execute(faults.agent(behaviour), "echo", {}, limits)
    assert outcome.code != "ok" and outcome.attempt_count == 1
    # The call has returned, so no other request of it can come: wait for the one.
    for _ in range(100):
        if faults.recorder.requests:
            break
        await anyio.sleep(0.05)
    assert len(faults.recorder.requests) == 1


def test_backoff_doubles() -> None:
    limits = CallLimits(retry_backoff_s=0.5)
    assert [limits.backoff_s(n) for n in (1, 2, 3)] == [0.5, 1.0, 2.0]
