"""Any JSON at the front doors' JSON-RPC methods: a JSON-RPC answer, never a 5xx.

Hypothesis draws params (and the values inside a Message, a tool call, a task
request) as arbitrary JSON for every method each door answers, and sends them
over real HTTP to one gateway; every answer must be a JSON-RPC response with a
result or an error whose `data` is holon's error body, within a bounded size.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from records import Store
from tests._hypothesis import derandomized
from tests.gateway.server._doors import CALLER, INPUT, two_call_gateway
from tests.gateway.server._gateway import Gateway

pytestmark = pytest.mark.slow

SCALARS = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)
DOORS = {
    "/mcp": ("initialize", "ping", "tools/list", "tools/call"),
    "/v1/capabilities/ticket.classify/a2a": ("SendMessage", "GetTask", "CancelTask"),
    "/v1/agents/acme/priced/a2a": ("SendMessage", "GetTask", "CancelTask"),
}


def _params() -> st.SearchStrategy[Any]:
    message = st.fixed_dictionaries(
        {"parts": st.lists(st.dictionaries(st.sampled_from(["data", "text", "url"]), JSON))},
        optional={"taskId": JSON, "contextId": JSON, "messageId": JSON},
    )
    return (
        JSON
        | st.fixed_dictionaries({"message": message}, optional={"configuration": JSON})
        | st.fixed_dictionaries({"name": JSON}, optional={"arguments": JSON})
        | st.fixed_dictionaries({"name": st.just("ticket.classify"), "arguments": JSON})
        | st.fixed_dictionaries({"id": JSON})
        | st.fixed_dictionaries({"protocolVersion": JSON})
    )


def test_any_params_get_a_json_rpc_answer(store: Store, tmp_path: Path) -> None:
    with two_call_gateway(store, tmp_path) as gw:
        _fuzz(gw)


def _fuzz(gw: Gateway) -> None:
    headers = {"Accept": "application/json, text/event-stream"}

    @derandomized(150)
    @given(
        door=st.sampled_from(sorted(DOORS)),
        index=st.integers(0, 3),
        params=_params(),
        request_id=st.integers(-(2**70), 2**70) | st.text(max_size=300) | st.none(),
    )
    def check(door: str, index: int, params: Any, request_id: Any) -> None:
        methods = DOORS[door]
        body = {"jsonrpc": "2.0", "method": methods[index % len(methods)], "params": params}
        if request_id is not None:
            body["id"] = request_id
        answer = gw.call("POST", door, CALLER, json=body, headers=headers)
        assert answer.status_code in (200, 202), (body, answer.text)
        if answer.status_code == 202:
            assert request_id is None
            return
        reply = answer.json()
        assert reply["jsonrpc"] == "2.0"
        if "error" in reply:
            assert isinstance(reply["error"]["code"], int)
            assert set(reply["error"]["data"]) == {"code", "message", "details"}
        else:
            assert "result" in reply
        assert len(answer.content) < 64 * 1024

    check()
    # The gateway still answers a real call afterwards, through every door.
    ok = gw.call("POST", "/v1/capabilities/ticket.classify/invoke", CALLER, json={"input": INPUT})
    assert ok.status_code in (200, 402), ok.text
