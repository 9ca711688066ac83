"""The MCP front door: the gateway as an MCP server at /mcp (Streamable HTTP, JSON answers).

Its tools are the capabilities the caller's mandates name (each tool's
name is the capability; its input and output schemas are the capability's,
from the suite that certifies it), and `tools/call` is the routed live call
of POST /v1/capabilities/{capability}/invoke: the same `LiveCalls.route`,
the same mandates, ledger row, budget and rate limit, counted by the same
metrics (`_routes_calls.observed`). docs/gateway.md, "MCP front door", has
the mapping.

The door is stateless: every request carries the caller's bearer token and
is answered with one JSON body (Streamable HTTP lets a server answer a POST
with `application/json` instead of an event stream), so no session lives in
a process and any process of a gateway answers any request. There is no
server-to-client stream: GET /mcp is 405, as the transport allows.

Errors: a request that is not JSON-RPC, an unknown method or bad params is a
JSON-RPC error (its `data` is holon's error body); a live call that is
refused or fails (a mandate's denial, a budget, a rate limit, an input
outside the schema, an agent's failure) is a tool result with `isError`,
its text the error's message and `_meta.holon.error` holon's error body,
as MCP asks of tool execution errors (the model sees why).
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from agents import printable
from evals.suites import Contract
from gateway._params import id_text
from gateway._roles import CALLER
from gateway.server._jsonrpc import (
    INVALID_PARAMS,
    RpcError,
    RpcRequest,
    answer,
    encode_result,
    rpc_result,
    unknown_method,
)
from gateway.server._routes_calls import answer_too_large, mandated_capabilities
from gateway.web import Bearer, Endpoint, Shared, observed
from schema import __version__
from schema.errors import Forbidden, HolonError, UsageError
from schema.jsontext import dumps

log = logging.getLogger(__name__)

__all__ = ["ENDPOINTS", "PROTOCOL_VERSIONS", "mcp_post", "tool_error", "tool_of"]

# The handshake-era revisions this door speaks, newest first (initialize negotiates).
PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26")
METHODS = ("initialize", "ping", "tools/list", "tools/call")
# The answer holds the output twice (structuredContent and its JSON text block, as
# MCP asks for older clients), so it may be up to twice a live call's answer.
ANSWER_FACTOR = 2
ANY_OBJECT: dict[str, Any] = {"type": "object"}


def _object_shaped(schema: dict[str, Any] | None) -> bool:
    return schema is not None and schema.get("type") == "object"


def tool_of(capability: str, contract: Contract | None) -> dict[str, Any]:
    """The MCP tool of a capability: an object schema is the tool's as it is; any other
    is wrapped as the one property `input` (`output`), since MCP tool schemas are objects."""
    tool: dict[str, Any] = {
        "name": capability,
        "title": capability,
        "description": f"the capability {capability}, a live call routed to the best agent "
        "your mandates allow (holon)",
    }
    if contract is None:  # no suite certifies it: nothing to publish but "an object"
        tool["inputSchema"] = ANY_OBJECT
        return tool
    described = contract.input_schema.get("description")
    if isinstance(described, str):
        tool["description"] += ": " + printable(described, 2000)
    tool["inputSchema"] = _wrapped(contract.input_schema, "input")
    tool["outputSchema"] = _wrapped(contract.output_schema, "output")
    return tool


def _wrapped(schema: dict[str, Any], key: str) -> dict[str, Any]:
    if _object_shaped(schema):
        return schema
    return {"type": "object", "required": [key], "properties": {key: schema}}


async def mcp_post(request: Request, who: Bearer, shared: Shared) -> Response:
    _check_origin(request)

    async def dispatch(rpc: RpcRequest) -> Response:
        if rpc.method == "initialize":
            return rpc_result(rpc.id, _initialize(rpc))
        if rpc.method == "ping":
            return rpc_result(rpc.id, {})
        if rpc.method == "tools/list":
            return rpc_result(rpc.id, {"tools": await _tools(who, shared)})
        if rpc.method == "tools/call":
            return await _call(rpc, who, shared)
        raise unknown_method(rpc, METHODS)

    return await answer(request, shared.max_body_bytes, dispatch)


def _check_origin(request: Request) -> None:
    """MCP asks servers to check Origin (DNS rebinding): a browser's request from another
    origin is refused. Clients that are not browsers send none."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    host = request.headers.get("host", "")
    if origin.split("://", 1)[-1].rstrip("/") != host:
        raise Forbidden(
            "a request to /mcp from another origin is refused",
            details={"origin": printable(origin, 200)},
        )


def _initialize(rpc: RpcRequest) -> dict[str, Any]:
    asked = rpc.params.get("protocolVersion")
    version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
    return {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": False}},
        "serverInfo": {"name": "holon", "title": "holon gateway", "version": __version__},
        "instructions": "Each tool is a capability your mandates allow; a call is a live "
        "call under them (charged, rate-limited and written to your ledger).",
    }


async def _tools(who: Bearer, shared: Shared) -> list[dict[str, Any]]:
    names = await mandated_capabilities(who, shared)
    return [tool_of(name, await shared.calls.contract(name)) for name in names]


async def _call(rpc: RpcRequest, who: Bearer, shared: Shared) -> Response:
    try:
        capability = id_text(rpc.params.get("name"), "$.params.name", "a tool name")
    except UsageError as exc:
        raise RpcError.of(exc, INVALID_PARAMS) from None
    arguments = rpc.params.get("arguments", {})
    if not isinstance(arguments, dict):
        raise RpcError(
            INVALID_PARAMS,
            "arguments must be a JSON object",
            details={"path": "$.params.arguments"},
        )
    contract = await shared.calls.contract(capability)
    wrapped_in = contract is not None and not _object_shaped(contract.input_schema)
    wrapped_out = contract is not None and not _object_shaped(contract.output_schema)
    if wrapped_in:
        extra = sorted(key for key in arguments if key != "input")
        if "input" not in arguments or extra:
            raise RpcError(
                INVALID_PARAMS,
                f"the tool {capability} takes one argument, input",
                details={"path": "$.params.arguments", "expected": ["input"]},
            )
        input_: Any = arguments["input"]
    else:
        input_ = arguments

    async def encode(body: dict[str, Any], limit: int) -> Response:
        output = body["output"]
        structured = {"output": output} if wrapped_out else output
        meta = {key: value for key, value in body.items() if key != "output"}
        result: dict[str, Any] = {
            "content": [{"type": "text", "text": dumps(output)}],
            "isError": False,
            "_meta": {"holon": meta},
        }
        if isinstance(structured, dict):
            result["structuredContent"] = structured
        content = encode_result(rpc.id, result)
        if len(content) > limit * ANSWER_FACTOR:
            raise answer_too_large(body, len(content), limit * ANSWER_FACTOR)
        return Response(content, media_type="application/json")

    try:
        return await observed(
            shared, capability, shared.calls.route(who.name, capability, input_), encode
        )
    except HolonError as exc:
        return rpc_result(rpc.id, tool_error(exc))


def tool_error(error: HolonError) -> dict[str, Any]:
    """A refused or failed live call as MCP's tool execution error."""
    body = error.to_body()["error"]
    return {
        # Text a model or a screen shows: escaped (the caller's own tool name may be in it).
        "content": [
            {"type": "text", "text": printable(f"{body['code']}: {body['message']}", 4000)}
        ],
        "isError": True,
        "_meta": {"holon": {"error": body}},
    }


ENDPOINTS = [
    Endpoint(
        "POST",
        "/mcp",
        CALLER,
        mcp_post,
        "the MCP front door (Streamable HTTP, JSON answers): the caller's capabilities "
        "as tools, tools/call a routed live call (docs/gateway.md, MCP front door)",
        request={
            "type": "object",
            "description": "one JSON-RPC 2.0 request or notification (MCP)",
            "required": ["jsonrpc", "method"],
        },
        response={"type": "object", "description": "one JSON-RPC 2.0 response"},
        statuses=(202, 413),
    ),
]
