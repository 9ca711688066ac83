"""A capability whose input and output are strings, through both doors: MCP wraps its
schemas as the one property `input` (`output`), A2A takes a TextPart as its input."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from evals.suites import install_suite
from records import Store
from tests._servers import serve
from tests.evals.suites._make import SUITE_YAML, make_suite
from tests.gateway.server._agent import manifest
from tests.gateway.server._doors import CALLER
from tests.gateway.server._gateway import Gateway, mandate, running_gateway

pytestmark = pytest.mark.slow

CAPABILITY = "text.shout"


def _shouting_agent() -> Starlette:
    async def call(request: Request) -> JSONResponse:
        body = json.loads(await request.body())
        return JSONResponse({"output": str(body["input"]).upper()})

    return Starlette(routes=[Route("/agent", call, methods=["POST"])])


def _install(store: Store, root: Path) -> None:
    cases = [
        {"id": f"{split}{i}", "input": f"hello {split}{i}", "expected": f"HELLO {split.upper()}{i}"}
        for split in ("p", "h")
        for i in range(3)
    ]
    directory = make_suite(
        root,
        suite_yaml=SUITE_YAML.replace("capability: ticket.classify", f"capability: {CAPABILITY}")
        .replace("id: tiny", "id: shout")
        .replace(
            "path: $.output.label, equals: {path: $.expected.label}",
            "path: $.output, equals: {path: $.expected}",
        ),
        public=cases[:3],
        holdout=cases[3:],
    )
    (directory / "schemas" / "input.json").write_text(json.dumps({"type": "string"}))
    (directory / "schemas" / "output.json").write_text(json.dumps({"type": "string"}))
    install_suite(store, directory)


async def _mcp(gw: Gateway) -> tuple[Any, Any]:
    headers = {"Authorization": f"Bearer {gw.token(CALLER)}"}
    async with (
        httpx.AsyncClient(headers=headers, timeout=30) as http,
        streamable_http_client(gw.url + "/mcp", http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        called = await session.call_tool(CAPABILITY, {"input": "hi there"})
        return listed, called


def test_string_capabilities_through_both_doors(store: Store, tmp_path: Path) -> None:
    _install(store, tmp_path)
    with serve(_shouting_agent()) as agent_url:
        store.agents.register(manifest("acme/shout", agent_url, capabilities=[CAPABILITY]))
        store.mandates.grant(mandate(capabilities=[CAPABILITY]))
        with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
            listed, called = asyncio.run(_mcp(gw))
            door = f"/v1/capabilities/{CAPABILITY}/a2a"
            message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi there"}]}
            rpc = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
            texted = gw.call(
                "POST", door, CALLER, json={**rpc, "params": {"message": message}}
            ).json()
            card = gw.call(
                "GET", f"/v1/capabilities/{CAPABILITY}/.well-known/agent-card.json", CALLER
            ).json()
    (tool,) = listed.tools
    assert tool.inputSchema == {
        "type": "object",
        "required": ["input"],
        "properties": {"input": {"type": "string"}},
    }
    assert tool.outputSchema["properties"] == {"output": {"type": "string"}}
    assert called.isError is False, called
    assert called.structuredContent == {"output": "HI THERE"}
    task = texted["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    assert task["artifacts"][0]["parts"][0]["data"] == "HI THERE"
    assert card["skills"][0]["inputModes"] == ["application/json", "text/plain"]
