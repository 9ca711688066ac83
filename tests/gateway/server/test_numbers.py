"""Number amplification through a real gateway and a real agent on 127.0.0.1, both ways.

caller -> gateway -> agent: a number past the limits is a 400 naming its
JSON path, before any mandate or ledger row; one within them reaches the
agent as written (`1E+3999`, 7 characters, not 4000 digits); an input whose
request would be over 16 MiB as written is a 413 and its reservation is
given back. agent -> gateway -> caller: an answer past the limits, or an
output too large to send as written, is the agent's `invalid_response`
(502, settled at zero), never an oversized answer.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from records import Store
from tests._servers import serve
from tests.gateway.server import _numbers_agent
from tests.gateway.server._agent import manifest
from tests.gateway.server._gateway import Gateway, mandate, running_gateway

pytestmark = pytest.mark.slow

INVOKE = "/v1/agents/acme/numbers/invoke"
CALLER = "caller:finance-bot"


@pytest.fixture
def gateway(store: Store, tmp_path: Path) -> Any:
    with serve(_numbers_agent.app) as agent_url:
        store.agents.register(manifest("acme/numbers", agent_url))
        store.mandates.grant(mandate(max_cost_per_call_usd="0.01"))
        with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
            _numbers_agent.received.clear()
            yield gw


def _ledger(gw: Gateway) -> list[dict[str, Any]]:
    """The caller's ledger rows through the gateway (it waits for settlements in flight)."""
    response = gw.call("GET", "/v1/ledger", CALLER)
    assert response.status_code == 200, response.text
    items: list[dict[str, Any]] = response.json()["items"]
    return items


def _post(gw: Gateway, body: bytes) -> Any:
    headers = {"Content-Type": "application/json"}
    return gw.call("POST", INVOKE, CALLER, content=body, headers=headers)


def test_a_caller_number_past_the_limits_is_refused_with_its_path(gateway: Gateway) -> None:
    body = b'{"capability":"ticket.classify","input":{"a":1E+2147483648,"b":2}}'
    response = _post(gateway, body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == "usage" and error["details"]["path"] == "$.input.a"
    assert "$.input.a: the number 1E+2147483648 is out of range" in error["message"]
    assert len(response.content) < 1024
    assert _numbers_agent.received == []
    assert _ledger(gateway) == []  # refused before any decision


def test_a_number_within_the_limits_reaches_the_agent_as_written(gateway: Gateway) -> None:
    body = b'{"capability":"ticket.classify","input":{"a":1E+3999,"b":-2.50E-3999,"c":2}}'
    response = _post(gateway, body)
    assert response.status_code == 200, response.text
    assert _numbers_agent.received == [len(body)]  # the same size on the way to the agent
    assert b'"output":{"a":1E+3999,"b":-2.50E-3999,"c":2}' in response.content
    assert len(response.content) < 1024


def _agents_fault(gw: Gateway, body: bytes, message: str) -> None:
    """The agent's answer to `body` is its invalid response (`message` says why), settled
    at no cost, in a short error."""
    response = _post(gw, body)
    assert response.status_code == 502, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid_response"
    assert message in error["message"]
    assert len(response.content) < 2048
    (row,) = _ledger(gw)
    assert (row["status"], row["outcome"], row["cost_usd"]) == ("settled", "invalid_response", "0")


def test_an_agent_number_past_the_limits_is_its_invalid_response(gateway: Gateway) -> None:
    _agents_fault(
        gateway,
        b'{"capability":"ticket.classify","input":{"mode":"huge"}}',
        "body at $.output.sum: the number 1e10000000 is out of range",
    )


def test_an_output_too_large_to_send_as_written_is_the_agents_fault(gateway: Gateway) -> None:
    # 1 MB from the agent, 4.4 MB written out in plain digits: over the 4 MiB answer cap.
    _agents_fault(
        gateway,
        b'{"capability":"ticket.classify","input":{"mode":"wide","count":210000}}',
        "bytes as JSON (its numbers written out)",
    )
    # The same numbers, fewer of them, fit and are sent whole.
    small = b'{"capability":"ticket.classify","input":{"mode":"wide","count":1000}}'
    answer = _post(gateway, small)
    assert answer.status_code == 200 and answer.json()["output"] == [Decimal("1E+20")] * 1000


def test_a_request_too_large_to_send_as_written_is_refused_and_released(
    gateway: Gateway,
) -> None:
    numbers = b",".join([b"1e20"] * (8 * 1024 * 1024 // 5 - 20))  # under the 8 MiB body cap
    body = b'{"capability":"ticket.classify","input":{"mode":"count","numbers":[' + numbers + b"]}}"
    assert len(body) < 8 * 1024 * 1024
    response = _post(gateway, body)
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "payload_too_large" and error["details"]["limit"] == 16 * 1024 * 1024
    assert _numbers_agent.received == []
    (row,) = _ledger(gateway)  # the reservation given back: the agent was never called
    assert (row["status"], row["outcome"], row["cost_usd"]) == ("settled", "refused", "0")


def test_the_answer_is_the_last_word_on_its_size() -> None:
    """What the route sends is measured as sent: over the cap, a 502, never the body."""
    import asyncio

    from gateway.server._routes_calls import answer_response
    from schema.errors import AgentCallFailed

    body = {"output": [Decimal("1E+20")] * 3000, "agent": "acme/numbers", "request_id": "r"}
    sent = asyncio.run(answer_response(body, 100_000))  # 3000 values: written off the loop
    assert sent.body.startswith(b'{"output":[100000000000000000000,')
    with pytest.raises(AgentCallFailed) as caught:
        asyncio.run(answer_response(body, len(sent.body) - 1))
    assert caught.value.http_status == 502 and caught.value.code == "invalid_response"
