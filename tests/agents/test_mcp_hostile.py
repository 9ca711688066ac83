"""The mcp adapter against hostile MCP servers: every lie is classified, bounded, never raised.

A raw Starlette app speaks just enough Streamable HTTP to lie in one way
per path: `{url}/{mode}/mcp`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agents import CallLimits, Executor, manifest_from_dict
from schema.errors import AgentProtocolError
from tests._servers import serve
from tests.agents.test_mcp import mcp_manifest

pytestmark = pytest.mark.anyio

TICKET = {"subject": "Refund please"}
LIMITS = CallLimits(timeout_s=3, max_response_bytes=1 << 20)
INFO = {"name": "liar", "version": "1.0.0"}


def _sse(*messages: Any) -> Response:
    text = "".join(f"event: message\ndata: {json.dumps(m)}\n\n" for m in messages)
    return Response(text, media_type="text/event-stream")


def _result(rpc_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "result": result}


def hostile_app() -> Starlette:
    async def endpoint(request: Request) -> Response:
        mode = request.path_params["mode"]
        message = json.loads(await request.body())
        method, rpc_id = message.get("method"), message.get("id")
        if method == "notifications/initialized":
            return Response(status_code=202)
        if method == "initialize":
            result = {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": INFO}
            if mode == "not-rpc":
                return JSONResponse([1, 2])
            if mode == "no-info":
                result.pop("serverInfo")
            if mode == "error-500":
                return Response("boom", status_code=500)
            headers = {"mcp-session-id": "s-1"}
            if mode == "bad-session":
                return Response(
                    json.dumps(_result(rpc_id, result)),
                    media_type="application/json",
                    headers={"mcp-session-id": "s\u00e9"},
                )
            return JSONResponse(_result(rpc_id, result), headers=headers)
        if method == "tools/list":
            cursor = (message.get("params") or {}).get("cursor") or "0"
            tools = [{"name": "classify", "inputSchema": {"type": "object"}}]
            return JSONResponse(_result(rpc_id, {"tools": tools, "nextCursor": cursor + "1"}))
        # tools/call
        if mode == "no-response":
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
            return _sse(note, _result("someone-else", {"structuredContent": {"label": "x"}}))
        if mode == "wrong-id":
            return JSONResponse(_result("someone-else", {"structuredContent": {"label": "x"}}))
        if mode == "flood":
            return _sse(_result(rpc_id, {"structuredContent": {"label": "x" * 2_000_000}}))
        if mode == "hang":
            await asyncio.sleep(5)  # past the 3 s deadline
        if mode == "two-blocks":
            text = {"type": "text", "text": '{"label": "billing"}'}
            return JSONResponse(_result(rpc_id, {"content": [text, text]}))
        if mode == "deep":
            nested: Any = "x"
            for _ in range(200):
                nested = [nested]
            return JSONResponse(_result(rpc_id, {"structuredContent": nested}))
        note = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"data": "hi"}}
        answer = _result(rpc_id, {"structuredContent": {"label": "billing"}, "content": []})
        return _sse(note, answer)

    return Starlette(routes=[Route("/{mode}/mcp", endpoint, methods=["POST"])])


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with serve(hostile_app()) as base:
        yield base


@pytest.mark.parametrize(
    ("mode", "code", "detail"),
    [
        ("ok", "ok", ""),
        ("not-rpc", "invalid_response", "MCP initialize: MCP answer is not a JSON-RPC 2.0"),
        ("no-info", "invalid_response", "lacks serverInfo name and version"),
        ("error-500", "agent_error", "HTTP 500: boom"),
        ("bad-session", "invalid_response", "session id is not visible ASCII"),
        ("no-response", "invalid_response", "holds no response to request"),
        ("wrong-id", "invalid_response", "not the response to"),
        ("flood", "invalid_response", "body larger than 1048576 bytes"),
        ("hang", "timeout", "no complete answer within 3 s"),
        ("two-blocks", "invalid_response", "not exactly one text block"),
        ("deep", "invalid_response", "nested deeper than 64 levels"),
    ],
)
async def test_every_lie_is_classified(
    executor: Executor, url: str, mode: str, code: str, detail: str
) -> None:
    agent = manifest_from_dict(mcp_manifest(f"{url}/{mode}/mcp"))
    outcome = await executor.execute(agent, "ticket.classify", TICKET, LIMITS)
    assert outcome.code == code, outcome
    assert detail in (outcome.error or ""), outcome.error
    if code == "ok":
        assert outcome.output == {"label": "billing"}  # the notification before it is skipped


async def test_endless_tool_pages_are_refused(executor: Executor, url: str) -> None:
    agent = manifest_from_dict(mcp_manifest(f"{url}/ok/mcp"))
    with pytest.raises(AgentProtocolError, match="more than 16 pages"):
        await executor.identify(agent, timeout_s=5)
