"""Real MCP servers built with the official `mcp` SDK (FastMCP, Streamable HTTP), for tests.

`mcp_agent(...)` returns a FastMCP server whose tools label tiny-suite
tickets ("refund" is billing, else account):

- `classify` returns its answer as structured content (a TypedDict);
- `classify_text` returns it as one JSON text block (no structured content);
- `classify_prose` returns prose; `broken` raises (an `isError` result);
- `mislabel` returns an object that breaks the capability's output schema.

`change_tools(server)` swaps `classify` for one with another input schema,
as a server that changes its tools between an eval and a live call does.
"""

from __future__ import annotations

import json
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
