"""An openai-chat agent asked with `stream: true` (its manifest's `stream`), honest or hostile
(openai_stream_server.py): the events are read within the executor's bounds (bytes, the
first byte, the gaps, the deadline, the cost cap) and assembled into the one completion that
is graded, never passed on piece by piece."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal

import pytest

from agents import CallLimits, Executor, Manifest, manifest_from_dict
from agents._openai import chat_request
from tests.agents.openai_server import MODEL, Recorder, serve_recorded
from tests.agents.openai_stream_server import stream_app
from tests.agents.test_openai_chat import TICKET, chat_manifest

pytestmark = pytest.mark.anyio

LIMITS = CallLimits(timeout_s=5, stream_first_byte_s=0.2, stream_gap_s=0.2)


@pytest.fixture(scope="module")
def _server() -> Iterator[tuple[str, Recorder]]:
    with serve_recorded(stream_app) as served:
        yield served


def streaming_agent(url: str, mode: str) -> Manifest:
    return manifest_from_dict(chat_manifest(f"{url}/{mode}/v1", stream=True))


async def test_an_honest_stream_is_assembled_priced_and_asked_for_usage(
    executor: Executor, server: tuple[str, Recorder]
) -> None:
    url, recorder = server
    agent = streaming_agent(url, "honest")
    outcome = await executor.execute(agent, "ticket.classify", TICKET, LIMITS)
    assert outcome.ok, outcome
    assert outcome.output == {"label": "billing"}
    assert outcome.usage is not None and outcome.usage.output_tokens == 200
    assert (outcome.cost_usd, outcome.cost_source) == (Decimal("0.0045"), "priced")
    evaluation = CallLimits(max_cost_usd=Decimal("0.5"), timeout_s=45, unreachable_retries=2)
    assert (await executor.execute(agent, "ticket.classify", TICKET, evaluation)).ok
    seen, evaluated = recorder.requests
    assert seen["body"] == evaluated["body"]  # a live call and an eval cell: the same bytes
    body = json.loads(seen["body"])
    assert (body["stream"], body["stream_options"]) == (True, {"include_usage": True})
    assert body["model"] == MODEL
    # What is sent depends on the manifest alone, never on whether the caller streams.
    assert seen["body"] == chat_request(agent, "ticket.classify", TICKET)


@pytest.mark.parametrize(
    ("mode", "code", "detail"),
    [
        ("late", "timeout", "first byte did not come within 0.2 s"),
        ("drip", "timeout", "next bytes did not come within 0.2 s"),
        ("never-ends", "timeout", "no complete answer within 1 s"),
        ("flood", "invalid_response", "the stream is over 65536 bytes"),
        ("malformed", "invalid_response", "a stream event"),
        ("no-done", "invalid_response", "without data: [DONE]"),
        ("error", "agent_error", "overloaded"),
        ("broken-last", "invalid_response", "message content"),
        ("model-switch", "invalid_response", "model changed"),
    ],
)
async def test_a_hostile_stream_is_a_classified_outcome(
    executor: Executor, server: tuple[str, Recorder], mode: str, code: str, detail: str
) -> None:
    url, _ = server
    limits = CallLimits(
        timeout_s=1, max_response_bytes=64 * 1024, stream_first_byte_s=0.2, stream_gap_s=0.2
    )
    outcome = await executor.execute(streaming_agent(url, mode), "ticket.classify", TICKET, limits)
    assert (outcome.code, outcome.output) == (code, None), outcome
    assert outcome.error is not None and detail in outcome.error, outcome.error


async def test_a_stream_running_past_the_cost_cap_is_cut_there(
    executor: Executor, server: tuple[str, Recorder]
) -> None:
    url, _ = server
    cap = Decimal("2.5")  # 250,000 output tokens at 10 per million: the third chunk is over
    limits = CallLimits(timeout_s=5, max_cost_usd=cap, stream_gap_s=1)
    outcome = await executor.execute(
        streaming_agent(url, "cost-run"), "ticket.classify", TICKET, limits
    )
    assert outcome.code == "cost_exceeded" and outcome.output is None
    assert outcome.usage is not None and outcome.usage.output_tokens == 300_000
    assert outcome.cost_usd > cap and outcome.latency_ms < 1000  # cut, not timed out
