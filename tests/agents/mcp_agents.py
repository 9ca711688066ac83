"""Real MCP servers built with the official `mcp` SDK (FastMCP, Streamable HTTP), for tests.

`mcp_agent(...)` returns a FastMCP server whose tools label tiny-suite
tickets ("refund" is billing, else account):

- `classify` returns its answer as structured content (a TypedDict);
- `classify_text` returns it as one JSON text block (no structured content);
- `classify_prose` returns prose; `broken` raises (an `isError` result);
- `mislabel` returns an object that breaks the capability's output schema.

`change_tools(server)` swaps `classify` for one with another input schema,
as a server that changes its tools between an eval and a live call does.
`Tap` records what reached the app on the wire (path, headers, JSON body).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, TypedDict

from mcp.server.fastmcp import FastMCP

SERVER_NAME = "acme-mcp-triage"
SERVER_VERSION = "1.0.0"


class Label(TypedDict):
    label: str


def _label(subject: str) -> str:
    return "billing" if "refund" in subject.lower() else "account"


def mcp_agent(*, json_response: bool = False, stateless: bool = False) -> FastMCP:
    server = FastMCP(SERVER_NAME, json_response=json_response, stateless_http=stateless)
    # FastMCP reports the SDK's own version unless its low-level server is told one.
    server._mcp_server.version = SERVER_VERSION

    @server.tool()
    def classify(subject: str, body: str = "") -> Label:
        """Label a support ticket."""
        return {"label": _label(subject)}

    @server.tool(structured_output=False)
    def classify_text(subject: str, body: str = "") -> str:
        return json.dumps({"label": _label(subject)})

    @server.tool(structured_output=False)
    def classify_prose(subject: str, body: str = "") -> str:
        return f"I would say {_label(subject)}."

    @server.tool()
    def broken(subject: str, body: str = "") -> Label:
        raise RuntimeError("the labeller is down")

    @server.tool()
    def mislabel(subject: str, body: str = "") -> dict[str, Any]:
        return {"category": _label(subject), "label": 7}

    return server


def change_tools(server: FastMCP) -> None:
    """Replace `classify` with a tool of the same name and another input schema."""
    server.remove_tool("classify")

    def classify(ticket: str) -> Label:
        """Label a support ticket (now one string)."""
        return {"label": _label(ticket)}

    server.add_tool(classify, structured_output=True)


@dataclass
class Tap:
    """An ASGI wrapper that records each request's path, headers and JSON-RPC method."""

    app: Any
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        body = b"".join(chunks)
        self.seen.append(
            {
                "method": scope["method"],
                "path": scope["path"],
                "headers": list(scope["headers"]),
                "body": body,
                "rpc": json.loads(body) if body else None,
            }
        )
        delivered = False

        async def replay() -> Any:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
