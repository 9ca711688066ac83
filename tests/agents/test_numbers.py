"""Number amplification through the executor, over real HTTP on 127.0.0.1.

A request is written with numbers as they came (`1E+3999` stays 7
characters), an answer with a number past the limits is `invalid_response`
naming its JSON path, an output that holon would write larger than the cap
is `invalid_response` too, and a request larger than `MAX_REQUEST_BYTES`
is refused before anything is sent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from agents import MAX_REQUEST_BYTES, CallLimits, Executor, Outcome
from schema.errors import PayloadTooLarge
from schema.jsontext import dumps
from tests._servers import serve
from tests.agents.conftest import make_agent

pytestmark = pytest.mark.anyio


@dataclass
class Scripted:
    """An agent answering whatever raw body a test sets, recording the bodies it gets."""

    answer: bytes = b'{"output": null}'
    received: list[bytes] = field(default_factory=list)

    def app(self) -> Starlette:
        async def call(request: Request) -> Response:
            self.received.append(await request.body())
            return Response(self.answer, media_type="application/json")

        async def card(request: Request) -> Response:
            base = str(request.base_url).rstrip("/")
            interface = {
                "url": base + "/a2a",
                "protocolBinding": "JSONRPC",
                "protocolVersion": "1.0",
            }
            body = {"name": "scripted", "version": "1.0.0", "supportedInterfaces": [interface]}
            return Response(dumps(body), media_type="application/json")

        async def a2a(request: Request) -> Response:
            self.received.append(await request.body())
            envelope = b'{"jsonrpc":"2.0","id":"1","result":{"message":{"parts":[{"data":%s}]}}}'
            return Response(envelope % self.answer, media_type="application/json")

        return Starlette(
            routes=[
                Route("/agent", call, methods=["POST"]),
                Route("/a2a", a2a, methods=["POST"]),
                Route("/.well-known/agent-card.json", card, methods=["GET"]),
            ]
        )


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[Scripted, str]]:
    agent = Scripted()
    with serve(agent.app()) as url:
        yield agent, url


async def _call(
    scripted: tuple[Scripted, str], answer: bytes, *, a2a: bool = False, **limits: int
) -> Outcome:
    agent, url = scripted
    agent.answer = answer
    manifest = make_agent(url if a2a else url + "/agent", protocol="a2a" if a2a else "holon-http")
    async with Executor() as executor:
        return await executor.execute(manifest, "echo", {"a": 1}, CallLimits(**limits))


@pytest.mark.parametrize("a2a", [False, True], ids=["holon-http", "a2a"])
async def test_an_answer_past_the_limits_is_invalid_and_names_the_path(
    scripted: tuple[Scripted, str], a2a: bool
) -> None:
    answer = b'{"sum":1e10000000}' if a2a else b'{"output":{"sum":1e10000000}}'
    outcome = await _call(scripted, answer, a2a=a2a)
    assert outcome.code == "invalid_response", outcome
    where = "$.result.message.parts[0].data.sum" if a2a else "$.output.sum"
    assert f"body at {where}: the number 1e10000000 is out of range" in outcome.error
    assert outcome.output is None


async def test_a_number_in_range_is_passed_on_unexpanded(scripted: tuple[Scripted, str]) -> None:
    outcome = await _call(scripted, b'{"output":{"sum":1E+3999,"n":' + b"9" * 1000 + b"}}")
    assert outcome.code == "ok", outcome
    output = outcome.output
    assert output == {"sum": Decimal("1E+3999"), "n": int("9" * 1000)}
    assert len(dumps(output)) == len('{"sum":1E+3999,"n":}') + 1000
    assert outcome.output_bytes >= len(dumps(output).encode())


@pytest.mark.parametrize("a2a", [False, True], ids=["holon-http", "a2a"])
async def test_an_output_holon_would_write_over_the_cap_is_invalid(
    scripted: tuple[Scripted, str], a2a: bool
) -> None:
    # 40,000 numbers of 5 bytes each: 200 KB read, 880 KB written in plain digits.
    numbers = b"[" + b",".join([b"1e20"] * 40_000) + b"]"
    answer = numbers if a2a else b'{"output":' + numbers + b"}"
    cap = 256 * 1024
    refused = await _call(scripted, answer, a2a=a2a, max_response_bytes=cap)
    assert refused.code == "invalid_response", refused
    assert f"bytes as JSON (its numbers written out), more than the {cap}" in refused.error
    # Under a cap that holds it, the output is kept and its size is known exactly.
    taken = await _call(scripted, answer, a2a=a2a, max_response_bytes=cap, max_output_bytes=10**6)
    assert taken.code == "ok", taken
    written = len(dumps(taken.output))
    assert written > 800_000 and taken.output_bytes == written


async def test_the_size_bound_of_an_ordinary_answer_costs_no_writing(
    scripted: tuple[Scripted, str],
) -> None:
    answer = b'{"output":{"label":"billing","score":0.5}}'
    outcome = await _call(scripted, answer)
    assert outcome.code == "ok"
    # Body size plus the growth allowed for each e/E: at least the written size.
    assert outcome.output_bytes >= len(dumps(outcome.output))


async def test_a_request_is_written_as_its_numbers_came(scripted: tuple[Scripted, str]) -> None:
    agent, url = scripted
    agent.received.clear()
    agent.answer = b'{"output":1}'
    inputs = {"a": Decimal("1E+3999"), "b": Decimal("-1E-3999"), "c": 2}
    async with Executor() as executor:
        outcome = await executor.execute(make_agent(url + "/agent"), "echo", inputs, CallLimits())
    assert outcome.ok
    assert agent.received == [b'{"capability":"echo","input":{"a":1E+3999,"b":-1E-3999,"c":2}}']


async def test_a_request_over_the_cap_is_refused_before_sending(
    scripted: tuple[Scripted, str],
) -> None:
    agent, url = scripted
    agent.received.clear()
    # Under the gateway's 8 MiB body cap as read, 35 MB as written.
    inputs = {"numbers": [Decimal("1E+20")] * (8 * 1024 * 1024 // 5)}
    async with Executor() as executor:
        with pytest.raises(PayloadTooLarge) as caught:
            await executor.execute(make_agent(url + "/agent"), "echo", inputs, CallLimits())
    assert caught.value.http_status == 413
    assert caught.value.details["limit"] == MAX_REQUEST_BYTES
    assert agent.received == []
