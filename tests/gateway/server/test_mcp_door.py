"""The MCP front door (/mcp) with the official `mcp` client: the caller's capabilities as
tools, `tools/call` as the routed live call under its mandates (ledger, budget, rate
limit, deny reasons as over /invoke), and hostile JSON-RPC answered, never a 5xx."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from records import Store
from tests.gateway.server._doors import (
    CALLER,
    INPUT,
    one_call_an_hour_gateway,
    two_call_gateway,
)
from tests.gateway.server._gateway import Gateway

pytestmark = pytest.mark.slow


@pytest.fixture
def gw(store: Store, tmp_path: Path) -> Iterator[Gateway]:
    with two_call_gateway(store, tmp_path) as gateway:
        yield gateway


async def _session_calls(gw: Gateway, role: str, calls: list[tuple[str, Any]]) -> list[Any]:
    headers = {"Authorization": f"Bearer {gw.token(role)}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(gw.url + "/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        init = await session.initialize()
        out: list[Any] = [init]
        for name, arguments in calls:
            if name == "tools/list":
                out.append(await session.list_tools())
            else:
                out.append(await session.call_tool(name, arguments))
        return out


def _rpc(gw: Gateway, body: Any, role: str | None = CALLER, **kw: Any) -> httpx.Response:
    headers = {"Accept": "application/json, text/event-stream", **kw.pop("headers", {})}
    if isinstance(body, (bytes, str)):
        return gw.call("POST", "/mcp", role, content=body, headers=headers, **kw)
    return gw.call("POST", "/mcp", role, json=body, headers=headers, **kw)


def test_tools_are_the_mandated_capabilities_and_a_call_is_a_live_call(gw: Gateway) -> None:
    init, listed, first, second, third = asyncio.run(
        _session_calls(
            gw,
            CALLER,
            [
                ("tools/list", None),
                ("ticket.classify", INPUT),
                ("ticket.classify", INPUT),
                ("ticket.classify", INPUT),
            ],
        )
    )
    assert init.serverInfo.name == "holon"
    tools = {tool.name: tool for tool in listed.tools}
    assert list(tools) == ["ticket.classify"]
    schema = tools["ticket.classify"].inputSchema
    assert "subject" in schema["required"]  # the tiny suite's schema, as installed
    assert tools["ticket.classify"].outputSchema["type"] == "object"
    # Answered with the agent's output as structured content (checked by the client
    # against the tool's output schema) and holon's envelope in _meta.
    assert first.isError is False, first
    assert first.structuredContent["label"] == "billing"
    meta = first.meta["holon"]
    assert meta["agent"] == "acme/priced" and meta["mandate"] == "finance-tickets"
    assert Decimal(meta["cost_usd"]) == Decimal("0.004")
    # The budget (0.01 at a 0.005 cap) holds two calls: the third is denied as over /invoke.
    assert second.isError is False
    assert third.isError is True
    error = third.meta["holon"]["error"]
    assert error["code"] == "budget_exhausted", error
    assert third.content[0].text.startswith("budget_exhausted: ")
    rows = gw.call("GET", "/v1/ledger", CALLER).json()["items"]
    assert sorted((r["decision"], r["status"]) for r in rows) == [
        ("allow", "settled"),
        ("allow", "settled"),
        ("deny", "denied"),
    ]
    mine = [r for r in rows if r["request_id"] == meta["request_id"]]
    assert [r["cost_usd"] for r in mine] == [meta["cost_usd"]]


def test_a_caller_sees_and_calls_only_what_its_mandates_allow(gw: Gateway) -> None:
    # Another caller, with no mandate at all: no tools, and a call is denied exactly
    # as over POST /v1/capabilities/{cap}/invoke (the same reason, a ledger row).
    _, listed, called = asyncio.run(
        _session_calls(gw, "caller:stranger", [("tools/list", None), ("ticket.classify", INPUT)])
    )
    assert listed.tools == []
    assert called.isError is True
    over_mcp = called.meta["holon"]["error"]
    over_http = gw.call(
        "POST",
        "/v1/capabilities/ticket.classify/invoke",
        "caller:stranger",
        json={"input": INPUT},
    ).json()["error"]
    assert over_mcp["code"] == over_http["code"] == "no_mandate", over_mcp
    assert over_mcp["details"].keys() == over_http["details"].keys()
    stranger = gw.call("GET", "/v1/ledger", "caller:stranger").json()["items"]
    assert [r["decision"] for r in stranger] == ["deny", "deny"]


def test_an_input_outside_the_schema_is_the_tools_error(gw: Gateway) -> None:
    _, called = asyncio.run(_session_calls(gw, CALLER, [("ticket.classify", {"subject": 5})]))
    assert called.isError is True
    assert called.meta["holon"]["error"]["code"] == "invalid_input"


def test_rate_limit_bites_over_mcp(store: Store, tmp_path: Path) -> None:
    with one_call_an_hour_gateway(store, tmp_path) as gw:
        _, ok, limited = asyncio.run(
            _session_calls(gw, CALLER, [("ticket.classify", INPUT), ("ticket.classify", INPUT)])
        )
    assert ok.isError is False
    error = limited.meta["holon"]["error"]
    assert error["code"] == "rate_limited" and error["details"]["retry_after_s"] >= 1


def test_without_a_token_or_with_the_wrong_role_it_is_refused(gw: Gateway) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    unauthenticated = _rpc(gw, ping, role=None)
    assert unauthenticated.status_code == 401
    assert unauthenticated.headers["www-authenticate"] == "Bearer"
    assert _rpc(gw, ping, role="org:acme").status_code == 403
    assert _rpc(gw, ping).json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"[]", -32600),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600),
        (b'"ping"', -32600),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": 5}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": []}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {}}', -32602),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
            b'"params": {"name": "ticket.classify", "arguments": [1]}}',
            -32602,
        ),
        (
            b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", '
            b'"params": {"name": "a\\u0000b", "arguments": {}}}',
            -32602,
        ),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "resources/list"}', -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "' + b"x" * 100_000 + b'"}', -32601),
        (b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', -32700),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "n": 1E+999999}', -32700),
        (b'{"a":' * 100 + b"1" + b"}" * 100, -32700),
    ],
)
def test_hostile_requests_are_json_rpc_errors(gw: Gateway, body: bytes, code: int) -> None:
    answer = _rpc(gw, body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 200, answer.text
    error = answer.json()["error"]
    assert error["code"] == code, error
    assert set(error["data"]) == {"code", "message", "details"}
    assert len(answer.content) < 4096  # bounded, whatever the request held


def test_an_unknown_method_is_named_escaped_and_bounded(gw: Gateway) -> None:
    method = "tools/\u202eevil\u0007" + "y" * 5000
    answer = _rpc(gw, {"jsonrpc": "2.0", "id": "a", "method": method}).json()
    assert answer["id"] == "a"
    shown = answer["error"]["data"]["details"]["method"]
    assert "\u202e" not in shown and "\u0007" not in shown and len(shown) <= 100
    assert "\\u202e" in shown


def test_a_huge_message_is_413_and_a_notification_202(gw: Gateway) -> None:
    big = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * (9 << 20) + b'"}'
    answer = _rpc(gw, big, headers={"Content-Type": "application/json"})
    assert answer.status_code == 413
    assert answer.json()["error"]["code"] == "payload_too_large"
    notified = _rpc(gw, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert (notified.status_code, notified.content) == (202, b"")
    assert gw.call("GET", "/mcp", CALLER).status_code == 405


def test_a_browser_from_another_origin_is_refused(gw: Gateway) -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    answer = _rpc(gw, ping, headers={"Origin": "http://evil.example"})
    assert answer.status_code == 403
    same = gw.url.split("://", 1)[1]
    assert _rpc(gw, ping, headers={"Origin": f"http://{same}"}).status_code == 200


def test_an_unknown_tool_is_denied_as_over_invoke(gw: Gateway) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "invoice.extract", "arguments": {}},
    }
    result = _rpc(gw, call).json()["result"]
    assert result["isError"] is True
    assert result["_meta"]["holon"]["error"]["code"] in ("not_found", "capability_not_allowed")


def test_a_tool_name_with_bidi_text_is_denied_and_its_text_escaped(gw: Gateway) -> None:
    name = "ticket.\u202eclassify"
    call = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": name}}
    answer = _rpc(gw, call)
    assert answer.status_code == 200
    result = answer.json()["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "\u202e" not in text and "\\u202e" in text
