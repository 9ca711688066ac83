"""Routes of live calls, mandates and the ledger."""

from __future__ import annotations

from typing import Any

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import Response

from agents import printable
from gateway import operations
from gateway._params import id_text
from gateway._roles import CALLER
from gateway._tracing import caller_context
from gateway.web import Bearer, Endpoint, Shared, body_object, endpoint, observed, read_json
from schema.errors import AgentCallFailed, UsageError
from schema.jsontext import LARGE_NODES, count_nodes, dumps, format_path

# The one declaration of a live call's body: what is read and what the OpenAPI says.
INVOKE_KEYS: dict[str, dict[str, Any]] = {
    "capability": {
        "type": "string",
        "description": "the capability (on /v1/capabilities/{capability}/invoke: the path's)",
    },
    "input": {"description": "the input, checked against the capability's input schema"},
}
INVOKE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["capability", "input"],
    "properties": INVOKE_KEYS,
    "additionalProperties": False,
}
RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "output",
        "cost_usd",
        "cost_source",
        "agent",
        "agent_version",
        "mandate",
        "request_id",
        "latency_ms",
    ],
    "properties": {
        "output": {},
        "usage": {"type": ["object", "null"]},
        "cost_usd": {"type": "string"},
        "cost_source": {"enum": ["priced", "reported", "none"]},
        "agent": {"type": "string"},
        "agent_version": {"type": "string"},
        "mandate": {"type": "string"},
        "request_id": {"type": "string"},
        "latency_ms": {"type": "number"},
        "routing": {"type": "object"},
    },
}


async def _invoke_body(request: Request, shared: Shared) -> tuple[str | None, Any]:
    body = body_object(await read_json(request, shared.max_body_bytes), "the body")
    unknown = sorted(key for key in body if key not in INVOKE_KEYS)
    if unknown:
        # A key the contract does not know ("stream": true) is refused, not ignored:
        # the caller would believe it had an effect.
        path = printable(format_path((unknown[0][:100],)), 80)  # a hostile key, bounded
        raise UsageError(
            code="unknown_key",
            message=f"{path}: unknown key; a live call's body has " + ", ".join(INVOKE_KEYS),
            details={"path": path, "expected": list(INVOKE_KEYS)},
        )
    if "input" not in body:
        raise UsageError('the body must be {"capability": "...", "input": ...}')
    capability = body.get("capability")
    if capability is not None:
        capability = id_text(capability, "$.capability", "a capability name")
    return capability, body["input"]


async def answer_response(body: dict[str, Any], limit: int) -> Response:
    """A live call's answer, written off the loop when its output is large, at most `limit` bytes.

    The executor already refused outputs that leave no room for the rest of
    the answer under `limit`; this is the last word on what is sent.
    """
    if count_nodes(body.get("output"), LARGE_NODES) > LARGE_NODES:
        text = await to_thread.run_sync(dumps, body)
    else:
        text = dumps(body)
    content = text.encode()
    if len(content) > limit:
        raise answer_too_large(body, len(content), limit)
    return Response(content, media_type="application/json")


def answer_too_large(body: dict[str, Any], size: int, limit: int) -> AgentCallFailed:
    """The agent's `invalid_response`: its answer, in a door's envelope, is over `limit` bytes."""
    return AgentCallFailed(
        f"{body.get('agent')}: invalid_response: the answer would be {size} bytes, "
        f"more than the {limit} a caller is sent",
        code="invalid_response",
        details={"agent": body.get("agent"), "request_id": body.get("request_id")},
    )


async def mandated_capabilities(who: Bearer, shared: Shared) -> list[str]:
    """The capabilities the caller's unexpired mandates name, in name order: all a front
    door lists to a caller (MCP tools, OpenAI models), and nothing else."""
    lookups = shared.calls.lookups
    now = shared.calls.clock()
    held = await shared.run(lookups.held_mandates, who.name)
    return sorted(
        {
            capability
            for mandate in held.mandates
            if mandate.expires_at is None or mandate.expires_at > now
            for capability in mandate.capabilities
        }
    )


async def invoke_agent(request: Request, who: Bearer, shared: Shared) -> Response:
    agent_id = f"{request.path_params['org']}/{request.path_params['name']}"
    capability, input_ = await _invoke_body(request, shared)
    if capability is None:
        raise UsageError("capability is required")
    parent = caller_context(request.headers.getlist("traceparent"))
    return await observed(
        shared,
        capability,
        shared.calls.invoke(who.name, agent_id, capability, input_, parent=parent),
        answer_response,
    )


async def invoke_capability(request: Request, who: Bearer, shared: Shared) -> Response:
    capability = request.path_params["capability"]
    named, input_ = await _invoke_body(request, shared)
    if named is not None and named != capability:
        raise UsageError(f"the body names capability {named!r}, the path {capability!r}")
    parent = caller_context(request.headers.getlist("traceparent"))
    return await observed(
        shared,
        capability,
        shared.calls.route(who.name, capability, input_, parent=parent),
        answer_response,
    )


_INVOKE_STATUSES = (402, 404, 413, 422, 429, 502, 504)
_TRACE_HEADERS = (
    (
        "traceparent",
        "the caller's W3C trace context: a valid one is continued (the agent's traceparent "
        "carries its trace id), anything else is ignored (docs/gateway.md, Tracing)",
    ),
)

ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/agents/{org}/{name}/invoke",
        CALLER,
        invoke_agent,
        "a live call to one agent under the caller's mandates",
        request=INVOKE_SCHEMA,
        response=RESPONSE_SCHEMA,
        statuses=_INVOKE_STATUSES,
        headers=_TRACE_HEADERS,
    ),
    Endpoint(
        "POST",
        "/v1/capabilities/{capability}/invoke",
        CALLER,
        invoke_capability,
        "a live call routed to the best agent the caller's mandates allow",
        request=INVOKE_SCHEMA,
        response=RESPONSE_SCHEMA,
        statuses=_INVOKE_STATUSES,
        headers=_TRACE_HEADERS,
    ),
    endpoint(operations.MANDATES_GRANT),
    endpoint(operations.MANDATES_LIST),
    endpoint(operations.MANDATES_SHOW),
    endpoint(operations.MANDATES_REVISIONS),
    endpoint(operations.MANDATES_REVOKE),
    endpoint(operations.MANDATES_CHECK),
    endpoint(operations.LEDGER_LIST),
    endpoint(operations.CANARIES_LIST),
]
