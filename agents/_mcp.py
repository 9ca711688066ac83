"""The `mcp` protocol: an MCP server over Streamable HTTP, each capability one of its tools.

holon speaks the transport itself, through the executor's one HTTP client
(bounded reads, deadlines, the address policy), never through the SDK's
client. Every message is a ``POST {endpoint}`` of one JSON-RPC message
with ``Accept: application/json, text/event-stream``:

- a session opens with `initialize` (protocol version `PROTOCOL_VERSION`,
  client info holon's) and the `notifications/initialized` notification;
  the server's `Mcp-Session-Id` header, when it sends one, and the
  negotiated `MCP-Protocol-Version` go on every later message;
- a call is `tools/call` with the manifest's tool for the capability and
  the input as its `arguments` (an input that is not an object is a caller
  bug); the JSON-RPC id is the request id;
- an answer is `application/json` (the JSON-RPC response) or
  `text/event-stream`, whose events are read (the whole stream, within the
  response cap) for the response with the request's id; notifications
  before it are skipped.

The output is the tool result's `structuredContent`; a result without it
must hold exactly one `text` content block whose text is JSON (read with
holon's exact reader and its bounds): anything else is `invalid_response`.
A result with `isError: true` and a JSON-RPC error are `agent_error`.

Identity: `serverInfo` name and version from `initialize`, and the tool
list (`tools/list`, every page) as the identity's capabilities (the claimed
capabilities whose tool is listed). Its "card" is ``{"serverInfo": {name,
version}, "tools": [...]}`` with the tools sorted by name; its RFC 8785
digest is what a certificate binds, as an A2A agent's card is, so a server
that changes a tool's schema stales its record and revokes its certificate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agents._manifest import Manifest
from agents._outcome import OutcomeCode
from agents._reader import BodyError, parse_json
from schema.canonical import canonical_digest
from schema.jsontext import JSONValue, dumps

__all__ = [
    "MAX_TOOL_PAGES",
    "PROTOCOL_VERSION",
    "RESPONSE_HEADERS",
    "McpFailure",
    "SESSION_HEADER",
    "McpSession",
    "card_digest",
    "card_of",
    "initialize_request",
    "initialized_notification",
    "interpret_call",
    "message_headers",
    "read_response",
    "session_from",
    "tool_for",
    "tools_call_request",
    "tools_list_request",
    "tools_page",
]

PROTOCOL_VERSION = "2025-06-18"
ACCEPT = "application/json, text/event-stream"
SESSION_HEADER = b"mcp-session-id"
RESPONSE_HEADERS = (b"content-type", SESSION_HEADER)
MAX_TOOL_PAGES = 16
_CLIENT = {"name": "holon", "version": "0.1"}
_SHOWN = 200


class McpFailure(Exception):
    """An MCP answer that is not an acceptable one; `code` is its outcome code."""

    def __init__(self, code: OutcomeCode, detail: str) -> None:
        super().__init__(detail)
        self.code: OutcomeCode = code


@dataclass(frozen=True)
class McpSession:
    """An initialized session: what every later message carries, and who answered."""

    session_id: str | None
    version: str
    name: str
    server_version: str


def tool_for(agent: Manifest, capability: str) -> str:
    tool = None if agent.mcp is None else agent.mcp.tool(capability)
    if tool is None:
        raise ValueError(f"{agent.id} maps no MCP tool to {capability!r}")
    return tool


def message_headers(base: dict[str, str], session: McpSession | None) -> dict[str, str]:
    """`base` (the Holon headers every protocol sends) plus what Streamable HTTP asks for."""
    headers = {**base, "Accept": ACCEPT}
    if session is not None:
        headers["MCP-Protocol-Version"] = session.version
        if session.session_id is not None:
            headers["Mcp-Session-Id"] = session.session_id
    return headers


def _rpc(rpc_id: str, method: str, params: dict[str, Any]) -> bytes:
    return dumps({"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}).encode()


def initialize_request(rpc_id: str) -> bytes:
    params = {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": _CLIENT}
    return _rpc(rpc_id, "initialize", params)


def initialized_notification() -> bytes:
    return dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode()


def tools_call_request(rpc_id: str, tool: str, input: JSONValue) -> bytes:
    if not isinstance(input, dict):
        raise ValueError("an MCP tool's arguments are an object: the input must be one")
    return _rpc(rpc_id, "tools/call", {"name": tool, "arguments": input})


def tools_list_request(rpc_id: str, cursor: str | None) -> bytes:
    return _rpc(rpc_id, "tools/list", {} if cursor is None else {"cursor": cursor})


def _sse_messages(text: str) -> list[str]:
    """The data of each event of an event stream (its `data:` lines joined by newlines)."""
    events: list[str] = []
    data: list[str] = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        if not line:
            if data:
                events.append("\n".join(data))
            data = []
        elif line.startswith("data:"):
            value = line[5:]
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        events.append("\n".join(data))
    return events


def read_response(body: bytes, content_type: str | None, rpc_id: str, depth: int) -> dict[str, Any]:
    """The JSON-RPC response with id `rpc_id` in an answer's body, or McpFailure."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    try:
        if media == "text/event-stream":
            text = body.decode("utf-8")
            for event in _sse_messages(text):
                message = parse_json(event.encode("utf-8"), depth)
                if isinstance(message, dict) and message.get("id") == rpc_id:
                    return _response(message)
            raise McpFailure(
                "invalid_response", f"the event stream holds no response to request {rpc_id!r}"
            )
        return _response(parse_json(body, depth), rpc_id)
    except BodyError as exc:
        raise McpFailure("invalid_response", f"MCP answer: {exc}") from None
    except UnicodeDecodeError:
        raise McpFailure("invalid_response", "MCP event stream is not UTF-8") from None


def _response(message: JSONValue, rpc_id: str | None = None) -> dict[str, Any]:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        raise McpFailure("invalid_response", "MCP answer is not a JSON-RPC 2.0 message")
    if rpc_id is not None and message.get("id") != rpc_id:
        raise McpFailure("invalid_response", f"MCP answer is not the response to {rpc_id!r}")
    error = message.get("error")
    if error is not None:
        if isinstance(error, dict):
            text = str(error.get("message", ""))[:_SHOWN]
            raise McpFailure("agent_error", f"MCP error {error.get('code')}: {text}")
        raise McpFailure("agent_error", "MCP error (malformed error object)")
    result = message.get("result")
    if not isinstance(result, dict):
        raise McpFailure("invalid_response", "MCP response has no result object")
    return result


def session_from(result: dict[str, Any], session_id: str | None) -> McpSession:
    """The session an `initialize` result opens (McpFailure when it is not one)."""
    version = result.get("protocolVersion")
    info = result.get("serverInfo")
    name = info.get("name") if isinstance(info, dict) else None
    server_version = info.get("version") if isinstance(info, dict) else None
    if not isinstance(version, str) or not version or not version.isprintable():
        raise McpFailure("invalid_response", "MCP initialize result has no protocolVersion")
    if not isinstance(name, str) or not isinstance(server_version, str) or not server_version:
        raise McpFailure(
            "invalid_response", "MCP initialize result lacks serverInfo name and version"
        )
    if session_id is not None and not (session_id.isascii() and session_id.isprintable()):
        raise McpFailure("invalid_response", "MCP session id is not visible ASCII")
    return McpSession(session_id, version[:64], name, server_version)


def _texts(content: Any) -> list[str]:
    return [
        block["text"]
        for block in (content if isinstance(content, list) else [])
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    ]


def interpret_call(result: dict[str, Any], depth: int) -> JSONValue:
    """A `tools/call` result's output, or McpFailure."""
    if result.get("isError") is True:
        text = " ".join(_texts(result.get("content")))
        raise McpFailure("agent_error", "MCP tool error" + (f": {text[:_SHOWN]}" if text else ""))
    if "structuredContent" in result and result["structuredContent"] is not None:
        output: JSONValue = result["structuredContent"]
        return output
    content = result.get("content")
    if not isinstance(content, list) or len(content) != 1 or len(_texts(content)) != 1:
        raise McpFailure(
            "invalid_response",
            "MCP tool result has no structuredContent and not exactly one text block",
        )
    try:
        return parse_json(_texts(content)[0].encode("utf-8", "surrogatepass"), depth)
    except BodyError as exc:
        raise McpFailure("invalid_response", f"MCP tool result text: {exc}") from None


def tools_page(result: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """One `tools/list` page: its tools and the next cursor (None: the last page)."""
    tools = result.get("tools")
    if not isinstance(tools, list) or not all(
        isinstance(t, dict) and isinstance(t.get("name"), str) for t in tools
    ):
        raise McpFailure("invalid_response", "MCP tools/list result has no list of named tools")
    cursor = result.get("nextCursor")
    return tools, cursor if isinstance(cursor, str) and cursor else None


def card_of(session: McpSession, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """What an MCP agent's identity digest covers: who it says it is and every tool."""
    ordered = sorted(tools, key=lambda tool: str(tool["name"]))
    return {
        "serverInfo": {"name": session.name, "version": session.server_version},
        "tools": ordered,
    }


def card_digest(card: dict[str, Any]) -> str | None:
    try:
        return canonical_digest(card)
    except ValueError:  # a number beyond a double: no canonical form, nothing to certify
        return None
