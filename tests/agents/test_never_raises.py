"""Whatever an agent sends, `execute` returns an Outcome: property tests over garbage answers."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agents import CallLimits, Executor, Outcome
from agents._a2a import CardError, _origin, interpret_reply, target_from_card
from agents._outcome import OUTCOME_CODES
from tests._servers import serve
from tests.agents.conftest import make_agent
from tests.agents.faults import raw_server

LIMITS = CallLimits(timeout_s=2, max_response_bytes=64 * 1024, max_json_depth=16)


class Script:
    """The next answer of the scripted agent."""

    status = 200
    body = b""
    headers: dict[str, str] = {}


def scripted_app(script: type[Script]) -> Starlette:
    async def answer(request: Request) -> Response:
        await request.body()
        return Response(script.body, status_code=script.status, headers=script.headers)

    return Starlette(routes=[Route("/", answer, methods=["POST"])])


@pytest.fixture(scope="module")
def scripted_url() -> Iterator[str]:
    with serve(scripted_app(Script)) as url:
        yield url


@pytest.fixture(scope="module")
def loop_and_executor() -> Iterator[tuple[asyncio.AbstractEventLoop, Executor]]:
    loop = asyncio.new_event_loop()
    executor = Executor()
    try:
        yield loop, executor
    finally:
        loop.run_until_complete(executor.aclose())
        loop.close()


def check(outcome: Outcome) -> None:
    assert outcome.code in OUTCOME_CODES
    assert outcome.error is None or (len(outcome.error) <= 300 and outcome.error.isprintable())
    assert (outcome.error is None) == outcome.ok
    if not outcome.ok:
        assert outcome.output is None


json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10)
json_like = st.recursive(
    json_scalars,
    lambda kids: (
        st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids, max_size=3)
    ),
    max_leaves=12,
)


def _json_text(value: Any) -> bytes:
    import json

    return json.dumps(value, allow_nan=True).encode()


bodies = st.one_of(
    st.binary(max_size=300),
    json_like.map(_json_text),
    st.fixed_dictionaries(
        {"output": json_like},
        optional={
            "usage": json_like
            | st.dictionaries(
                st.sampled_from(["input_tokens", "output_tokens", "cost_usd"]), json_like
            )
        },
    ).map(_json_text),
    st.integers(1, 40).map(lambda n: b'{"output": ' + b"[" * n + b"]" * n + b"}"),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    status=st.sampled_from([200, 201, 204, 299, 301, 400, 418, 500, 503]),
    body=bodies,
    encoding=st.sampled_from([None, "gzip", "br", "identity", "gzip-lie"]),
)
def test_garbage_http_answers_become_outcomes(
    loop_and_executor: tuple[asyncio.AbstractEventLoop, Executor],
    scripted_url: str,
    status: int,
    body: bytes,
    encoding: str | None,
) -> None:
    loop, executor = loop_and_executor
    Script.status = status
    Script.headers = {} if encoding is None else {"Content-Encoding": encoding.split("-")[0]}
    Script.body = gzip.compress(body) if encoding == "gzip" else body
    if status in (204, 304):
        Script.body = b""
    outcome = loop.run_until_complete(
        executor.execute(make_agent(scripted_url + "/"), "echo", {}, LIMITS)
    )
    check(outcome)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    head=st.sampled_from(
        [
            b"",
            b"HTTP/1.1 200 OK\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.0 999 ???\r\n\r\n",
            b"HTTP/1.1 302 Found\r\nLocation: \x1b[2J\r\n\r\n",
        ]
    ),
    tail=st.binary(max_size=200),
)
def test_garbage_bytes_on_the_socket_become_outcomes(
    loop_and_executor: tuple[asyncio.AbstractEventLoop, Executor], head: bytes, tail: bytes
) -> None:
    loop, executor = loop_and_executor
    script: list[str | bytes] = [head + tail]
    with raw_server(script) as (url, _):
        outcome = loop.run_until_complete(executor.execute(make_agent(url), "echo", {}, LIMITS))
    check(outcome)


any_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda kids: (
        st.lists(kids, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "result",
                    "error",
                    "task",
                    "message",
                    "status",
                    "state",
                    "parts",
                    "data",
                    "kind",
                    "artifacts",
                    "id",
                    "code",
                    "supportedInterfaces",
                    "url",
                    "protocolVersion",
                    "protocolBinding",
                    "transport",
                    "additionalInterfaces",
                    "preferredTransport",
                    "x",
                ]
            ),
            kids,
            max_size=4,
        )
    ),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(document=any_json)
def test_any_a2a_reply_is_classified(document: Any) -> None:
    reply = interpret_reply(document)
    assert reply.kind in ("output", "error", "invalid", "pending")


@settings(max_examples=300, deadline=None)
@given(card=any_json, url=st.text(max_size=30))
def test_any_card_yields_a_target_or_card_error(card: Any, url: str) -> None:
    if isinstance(card, dict) and isinstance(card.get("supportedInterfaces"), list):
        card["supportedInterfaces"].append(
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        )
    try:
        target = target_from_card(card, "http://agent.example/")
    except CardError:
        return
    # Whatever the card says, calls never leave the registered origin.
    assert _origin(target.url) == _origin("http://agent.example/")
