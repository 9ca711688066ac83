"""The a2a adapter against real servers built with the official a2a-sdk: A2A 1.0 and v0.3."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from decimal import Decimal
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agents import CallLimits, Executor, Identity
from agents._a2a import A2ATarget, CardError, interpret_reply, target_from_card
from schema.canonical import canonical_digest
from schema.jsontext import loads
from tests._servers import Tap, serve
from tests.agents.a2a_agents import CARD_VERSION, point_card_at, sdk_agent
from tests.agents.conftest import closed_port, make_agent

pytestmark = pytest.mark.anyio

INPUT = {"a": 1, "b": [1, Decimal("2.5")], "s": "x"}
LIMITS = CallLimits(timeout_s=10)


@contextmanager
def a2a_server(
    mode: str, *, version: str = "1.0", rpc_path: str = "/rpc", card_url: str | None = None
) -> Iterator[tuple[str, Tap]]:
    app, card = sdk_agent(mode, version=version, rpc_path=rpc_path)
    tap = Tap(app)
    with serve(tap) as url:
        point_card_at(card, card_url if card_url is not None else url + rpc_path)
        yield url, tap


def a2a_agent(url: str):  # type: ignore[no-untyped-def]
    return make_agent(url, protocol="a2a")


def rpc_calls(tap: Tap) -> list[dict[str, Any]]:
    return [seen for seen in tap.seen if seen["method"] == "POST"]


async def test_a2a_1_0_message_reply(executor: Executor) -> None:
    with a2a_server("message") as (url, tap):
        outcome = await executor.execute(
            a2a_agent(url), "echo", INPUT, LIMITS, secret="tok", request_id="rid-a2a"
        )
    assert outcome.ok, outcome
    # The SDK carried every number as a double; integral ones are ints again.
    assert outcome.output == {"echo": INPUT, "count": 5, "ratio": Decimal("0.5")}
    assert isinstance(outcome.output["count"], int)
    assert [seen["path"] for seen in tap.seen] == ["/.well-known/agent-card.json", "/rpc"]
    (call,) = rpc_calls(tap)
    assert call["headers"]["a2a-version"] == "1.0"
    assert call["headers"]["holon-request-id"] == "rid-a2a"
    assert call["headers"]["holon-capability"] == "echo"
    assert call["headers"]["authorization"] == "Bearer tok"
    body = call["json"]
    assert body["method"] == "SendMessage" and body["id"] == "rid-a2a"
    message = body["params"]["message"]
    assert message["role"] == "ROLE_USER" and message["messageId"] == "rid-a2a"
    assert message["parts"] == [{"data": {"capability": "echo", "input": {**INPUT, "b": [1, 2.5]}}}]


async def test_a2a_1_0_task_with_artifact(executor: Executor) -> None:
    with a2a_server("task") as (url, _):
        outcome = await executor.execute(a2a_agent(url), "echo", INPUT, LIMITS)
    assert outcome.ok and outcome.output["echo"] == INPUT


@pytest.mark.parametrize("version", ["1.0", "0.3"])
@pytest.mark.parametrize("mode", ["failed", "rejected"])
async def test_failed_or_rejected_task_is_agent_error(
    executor: Executor, mode: str, version: str
) -> None:
    with a2a_server(mode, version=version) as (url, _):
        outcome = await executor.execute(a2a_agent(url), "echo", INPUT, LIMITS)
    assert outcome.code == "agent_error" and outcome.output is None
    assert f"task {mode}" in (outcome.error or "")


async def test_reply_without_data_part_is_invalid(executor: Executor) -> None:
    with a2a_server("text-only") as (url, _):
        outcome = await executor.execute(a2a_agent(url), "echo", INPUT, LIMITS)
    assert outcome.code == "invalid_response" and "no data part" in (outcome.error or "")


@pytest.mark.parametrize("mode", ["message", "task"])
async def test_v0_3_fallback_when_the_card_offers_only_0_3(executor: Executor, mode: str) -> None:
    with a2a_server(mode, version="0.3") as (url, tap):
        outcome = await executor.execute(a2a_agent(url), "echo", INPUT, LIMITS, request_id="r03")
    assert outcome.ok, outcome
    assert outcome.output["echo"] == INPUT and outcome.output["count"] == 5
    (call,) = rpc_calls(tap)
    assert "a2a-version" not in call["headers"]
    body = call["json"]
    assert body["method"] == "message/send"
    message = body["params"]["message"]
    assert message["role"] == "user" and message["kind"] == "message"
    assert message["parts"][0]["kind"] == "data"


async def test_stale_cross_origin_card_url_is_not_followed(executor: Executor) -> None:
    # The card claims http://localhost:<closed>/ (a classic stale URL); the call goes to
    # the registered endpoint instead, where the JSON-RPC route actually is.
    stale = f"http://localhost:{closed_port()}/"
    with a2a_server("message", rpc_path="/", card_url=stale) as (url, tap):
        outcome = await executor.execute(a2a_agent(url), "echo", INPUT, LIMITS)
    assert outcome.ok, outcome
    assert rpc_calls(tap)[0]["path"] == "/"


async def test_card_is_cached_and_reread_after_a_failure(executor: Executor) -> None:
    with a2a_server("message") as (url, tap):
        agent = a2a_agent(url)
        for _ in range(3):
            assert (await executor.execute(agent, "echo", INPUT, LIMITS)).ok
        cards = [seen for seen in tap.seen if seen["method"] == "GET"]
        assert len(cards) == 1
    with a2a_server("failed") as (url, tap):
        agent = a2a_agent(url)
        for _ in range(2):
            assert (await executor.execute(agent, "echo", INPUT, LIMITS)).code == "agent_error"
        assert len([seen for seen in tap.seen if seen["method"] == "GET"]) == 2


async def test_a2a_identity_comes_from_the_card(executor: Executor) -> None:
    with a2a_server("message") as (url, _):
        agent = a2a_agent(url)
        identity = await executor.identify(agent)
        served = httpx.get(url + "/.well-known/agent-card.json").content
    # The card as served, by its RFC 8785 digest: what a certificate binds.
    card_digest = canonical_digest(loads(served))
    assert identity == Identity(
        id="acme-a2a-echo", version=CARD_VERSION, capabilities=("echo",), card_digest=card_digest
    )
    assert not identity.matches(agent)  # registered as 1.0.0, the card says 2.1.0
    assert identity.compare(agent).observation()["card_digest"] == card_digest


async def test_live_and_eval_a2a_calls_differ_only_by_their_ids(executor: Executor) -> None:
    with a2a_server("message") as (url, tap):
        agent = a2a_agent(url)
        await executor.execute(agent, "echo", INPUT, CallLimits(max_cost_usd=Decimal("0.01")))
        await executor.execute(
            agent, "echo", INPUT, CallLimits(max_cost_usd=Decimal(5), unreachable_retries=2)
        )
    first, second = rpc_calls(tap)

    def scrub(seen: dict[str, Any]) -> tuple[dict[str, str], str]:
        rid = seen["headers"]["holon-request-id"]
        # The request id and the trace context (agents._trace) are each call's own.
        headers = {
            k: v if k != "traceparent" else v[:3] + "TRACE-PARENT" + v[-3:]
            for k, v in seen["headers"].items()
            if k != "holon-request-id"
        }
        return headers, json.dumps(seen["json"], sort_keys=True).replace(rid, "RID")

    assert scrub(first) == scrub(second)
    assert "traceparent" in first["headers"]


async def test_unreachable_a2a_agent(executor: Executor) -> None:
    agent = a2a_agent(f"http://127.0.0.1:{closed_port()}")
    outcome = await executor.execute(
        agent, "echo", INPUT, CallLimits(unreachable_retries=1, retry_backoff_s=0.01)
    )
    assert outcome.code == "unreachable" and outcome.attempt_count == 2
    assert "agent card" in (outcome.error or "")


# -- protocol corners the SDK does not produce on demand: a minimal JSON-RPC agent ---------


def scripted_a2a(replies: list[Any], card: Any) -> tuple[Starlette, list[dict[str, Any]]]:
    """A hand-written JSON-RPC agent answering `replies` in order (the last repeats)."""
    seen: list[dict[str, Any]] = []

    async def card_route(request: Request) -> Response:
        if card is None:
            return Response("no card here", status_code=404)
        if isinstance(card, str):
            return Response(card, media_type="application/json")
        return JSONResponse(card)

    async def rpc(request: Request) -> Response:
        body = await request.json()
        seen.append(body)
        reply = replies[min(len(seen) - 1, len(replies) - 1)]
        return JSONResponse({"jsonrpc": "2.0", "id": body["id"], **reply})

    routes = [
        Route("/.well-known/agent-card.json", card_route, methods=["GET"]),
        Route("/", rpc, methods=["POST"]),
    ]
    return Starlette(routes=routes), seen


CARD_1_0 = {
    "name": "scripted",
    "version": "1.0.0",
    "supportedInterfaces": [{"url": "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
}
WORKING = {"result": {"task": {"id": "t1", "status": {"state": "TASK_STATE_WORKING"}}}}
DONE = {
    "result": {
        "id": "t1",
        "status": {"state": "TASK_STATE_COMPLETED"},
        "artifacts": [{"parts": [{"text": "hi"}]}, {"parts": [{"data": {"n": 7.0}}]}],
    }
}


async def test_pending_task_is_polled_until_it_completes(executor: Executor) -> None:
    app, seen = scripted_a2a([WORKING, WORKING, DONE], CARD_1_0)
    with serve(app) as url:
        outcome = await executor.execute(a2a_agent(url), "echo", {}, LIMITS, request_id="rp")
    assert outcome.ok and outcome.output == {"n": 7}
    assert [body["method"] for body in seen] == ["SendMessage", "GetTask", "GetTask"]
    assert seen[1]["params"] == {"id": "t1"}


async def test_task_that_never_settles_times_out(executor: Executor) -> None:
    app, _ = scripted_a2a([WORKING], CARD_1_0)
    with serve(app) as url:
        outcome = await executor.execute(a2a_agent(url), "echo", {}, CallLimits(timeout_s=0.3))
    assert outcome.code == "timeout"


@pytest.mark.parametrize(
    ("reply", "code", "reason"),
    [
        ({"error": {"code": -32001, "message": "Task not found"}}, "agent_error", "-32001"),
        ({"result": {"message": {"parts": []}}}, "invalid_response", "no data part"),
        (
            {"result": {"task": {"id": "t", "status": {"state": "TASK_STATE_INPUT_REQUIRED"}}}},
            "agent_error",
            "input-required",
        ),
        ({"result": 5}, "invalid_response", "no result object"),
        ({"result": {"hello": 1}}, "invalid_response", "neither a Message nor a Task"),
    ],
)
async def test_protocol_corners(executor: Executor, reply: Any, code: str, reason: str) -> None:
    app, _ = scripted_a2a([reply], CARD_1_0)
    with serve(app) as url:
        outcome = await executor.execute(a2a_agent(url), "echo", {}, LIMITS)
    assert outcome.code == code and reason in (outcome.error or ""), outcome


@pytest.mark.parametrize(
    ("card", "code", "reason"),
    [
        (None, "agent_error", "agent card: HTTP 404"),
        ("{not json", "invalid_response", "agent card: body is not JSON"),
        (
            {
                "name": "x",
                "version": "1",
                "supportedInterfaces": [
                    {"url": "/", "protocolBinding": "GRPC", "protocolVersion": "1.0"}
                ],
            },
            "invalid_response",
            "no JSON-RPC interface",
        ),
    ],
)
async def test_bad_cards(executor: Executor, card: Any, code: str, reason: str) -> None:
    app, seen = scripted_a2a([DONE], card)
    with serve(app) as url:
        outcome = await executor.execute(a2a_agent(url), "echo", {}, LIMITS)
    assert outcome.code == code and reason in (outcome.error or ""), outcome
    assert seen == []  # no message was sent on a card we could not use


# -- the card and the reply, as data --------------------------------------------------------


def test_legacy_0_3_card_without_supported_interfaces() -> None:
    card = {
        "name": "old",
        "version": "0.9",
        "protocolVersion": "0.3.0",
        "url": "http://agent.example/a2a",
        "preferredTransport": "JSONRPC",
    }
    assert target_from_card(card, "http://agent.example/") == A2ATarget(
        "http://agent.example/a2a", "0.3"
    )
    grpc_first = {
        **card,
        "preferredTransport": "GRPC",
        "additionalInterfaces": [{"url": "http://agent.example/rpc", "transport": "JSONRPC"}],
    }
    assert target_from_card(grpc_first, "http://agent.example/").url == "http://agent.example/rpc"


def test_1_0_is_preferred_when_both_are_offered() -> None:
    card = {
        "supportedInterfaces": [
            {"url": "http://a.example/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
            {"url": "http://a.example/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        ]
    }
    assert target_from_card(card, "http://a.example") == A2ATarget("http://a.example/v1", "1.0")


@pytest.mark.parametrize("card", [[], "card", {"supportedInterfaces": [{"url": 5}]}, {}])
def test_unusable_cards(card: Any) -> None:
    with pytest.raises(CardError):
        target_from_card(card, "http://a.example/")


def test_only_exactly_representable_integral_doubles_become_ints() -> None:
    reply = interpret_reply(
        {
            "result": {
                "message": {
                    "parts": [
                        {
                            "data": {
                                "small": Decimal("5.0"),
                                "big": Decimal("9007199254740993.0"),
                                "frac": Decimal("0.25"),
                                "nested": [Decimal("-2.0")],
                            }
                        }
                    ]
                }
            }
        }
    )
    assert reply.kind == "output"
    assert reply.output == {
        "small": 5,
        "big": Decimal("9007199254740993.0"),
        "frac": Decimal("0.25"),
        "nested": [-2],
    }
    assert isinstance(reply.output["small"], int) and not isinstance(reply.output["big"], int)
