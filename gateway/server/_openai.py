"""The OpenAI front door: `GET /v1/models` and `POST /v1/chat/completions`.

The `openai` SDKs (and LangChain, LiteLLM… as clients) pointed at
`{gateway}/v1` with a caller token as the API key reach the capabilities
and agents the caller may call. A completion **is** a live call: `model` a
capability is `LiveCalls.route` (as `/v1/capabilities/{capability}/invoke`),
`model` an agent is `LiveCalls.invoke` (as `/v1/agents/{org}/{name}/invoke`),
counted by the same metrics (`_routes_calls.observed`), so mandates,
budgets, reservations, rate limits, the contract, live conformance, the
ledger (one row a call) and tracing hold as over `/invoke`. Model ids and
the listing: gateway.server._openai_models; errors: _openai_errors.

The input is the JSON text of the last message, which must be the user's
(a string, or text parts joined); earlier messages are not passed on (a
capability call has no conversation, and a certified agent no prompt to
change). The answer's `choices[0].message.content` is the output as JSON
text, `finish_reason` `stop`, `usage` the agent's reported tokens (when it
reports both counts), `model` the agent that answered, and `holon` the rest
of `/invoke`'s answer (cost, mandate, request id, agent version, routing).

Parameters: the few a certified agent can ignore without changing what the
caller gets are accepted and not passed on (ACCEPTED); every other one is
refused by name (400 `unsupported_parameter`, `param` naming it), never
silently ignored; a parameter sent as null is not given, as at OpenAI.
`stream: true` answers the same call as server-sent events
(gateway.server._openai_stream), `stream_options.include_usage` honoured.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from typing import Any

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import Response

from agents import printable
from gateway._params import id_text
from gateway._roles import CALLER
from gateway._tracing import caller_context
from gateway.live import Started
from gateway.server._openai_errors import ERROR_SCHEMA, openai_error
from gateway.server._openai_models import MODELS_SCHEMA, agent_model, list_models
from gateway.server._openai_stream import completion_usage, stream_completion
from gateway.server._routes_calls import answer_too_large
from gateway.web import (
    INLINE_PARSE_BYTES,
    Bearer,
    Endpoint,
    Shared,
    body_object,
    observed,
    parse_body,
    read_json,
)
from schema.errors import HolonError, InvalidInput, UsageError
from schema.jsontext import LARGE_NODES, count_nodes, dumps

__all__ = ["ACCEPTED", "ENDPOINTS", "chat_completions"]

# Accepted and not passed on: sampling hints and a caller's label. The agent answers as
# it was certified (its manifest sets its own model parameters), the contract bounds the
# output, and the mandate's per-call cap bounds the cost that max_tokens would.
ACCEPTED = frozenset(
    {
        "temperature",
        "top_p",
        "presence_penalty",
        "frequency_penalty",
        "seed",
        "user",
        "max_tokens",
        "max_completion_tokens",
    }
)
# Accepted at the value that asks for nothing this door does not do.
_DEFAULTS: dict[str, tuple[Any, ...]] = {"n": (1,), "logprobs": (False,)}
_FORMATS = ("text", "json_object")  # the output is JSON text either way
# Why a few parameters are refused (any other key: "not supported by holon's OpenAI door").
_REASONS = {
    "stream": "stream is true or false",
    "stream_options": 'stream_options is {"include_usage": true or false}, with stream true',
    "n": "one live call answers one choice; send n 1 (or leave it out)",
    "logprobs": "an agent reports no log probabilities",
    "tools": "a capability call takes one JSON input and answers one JSON output, no tools",
    "tool_choice": "a capability call has no tools",
    "functions": "a capability call has no functions",
    "function_call": "a capability call has no functions",
    "response_format": "the output is JSON text under the capability's own output schema; "
    "send text or json_object (or leave it out)",
}
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
# The answer holds the output as JSON text inside a JSON string: escaping may double it.
ANSWER_FACTOR = 2

_MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {"role": {"type": "string"}, "content": {}},
}
CHAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "an OpenAI chat completion request; the last message is the user's and "
    "holds the input as JSON text",
    "required": ["model", "messages"],
    "properties": {
        "model": {
            "type": "string",
            "description": "a capability, `org/name` or `org/name:capability` (GET /v1/models)",
        },
        "messages": {"type": "array", "minItems": 1, "items": _MESSAGE},
        **{name: {"description": "accepted, not passed on"} for name in sorted(ACCEPTED)},
        "stream": {
            "type": "boolean",
            "description": "true: the answer as server-sent events of chat.completion.chunk",
        },
        "stream_options": {
            "type": "object",
            "properties": {"include_usage": {"type": "boolean"}},
            "additionalProperties": False,
        },
        "n": {"const": 1},
        "logprobs": {"const": False},
        "response_format": {"type": "object"},
    },
    "additionalProperties": False,
}
COMPLETION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "an OpenAI chat completion; `holon` holds the rest of /invoke's answer",
    "required": ["id", "object", "created", "model", "choices", "holon"],
    "properties": {
        "id": {"type": "string"},
        "object": {"const": "chat.completion"},
        "created": {"type": "integer"},
        "model": {"type": "string", "description": "the agent that answered"},
        "choices": {"type": "array"},
        "usage": {"type": "object"},
        "holon": {"type": "object"},
    },
}


def _refused(name: str) -> UsageError:
    shown = printable(name[:100], 100)  # a hostile key, bounded and escaped
    reason = _REASONS.get(name, "not supported by holon's OpenAI door")
    return UsageError(
        f"{shown}: {reason}",
        code="unsupported_parameter",
        details={"param": shown, "accepted": sorted({"model", "messages", *ACCEPTED})},
    )


def _check_parameters(body: dict[str, Any]) -> None:
    for name, value in body.items():
        # null is OpenAI's "not given" (clients such as LiteLLM send stop: null): it asks
        # for nothing, so it is no refusal's business.
        if name in ("model", "messages") or value is None:
            continue
        if name in ACCEPTED:
            _check_accepted(name, value)
        elif name in _DEFAULTS:
            if value not in _DEFAULTS[name] or isinstance(value, bool) != isinstance(
                _DEFAULTS[name][0], bool
            ):
                raise _refused(name)
        elif name == "stream":
            if not isinstance(value, bool):
                raise _refused(name)
        elif name == "stream_options":
            if not (
                body.get("stream") is True
                and isinstance(value, dict)
                and set(value) <= {"include_usage"}
                and isinstance(value.get("include_usage", False), bool)
            ):
                raise _refused(name)
        elif name == "response_format":
            if not (isinstance(value, dict) and value.get("type") in _FORMATS and len(value) == 1):
                raise _refused(name)
        else:
            raise _refused(name)


def _check_accepted(name: str, value: Any) -> None:
    if name == "user":
        ok = isinstance(value, str)
    elif name in ("seed", "max_tokens", "max_completion_tokens"):
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            or hasattr(value, "is_finite")
        )  # exact numbers arrive as Decimal
    if value is not None and not ok:
        raise UsageError(f"{name} has the wrong type", details={"param": name})


async def _user_input(messages: Any) -> tuple[str, Any]:
    """(the parameter it came from, the input) of the last message, the user's."""
    if not isinstance(messages, list) or not messages:
        raise UsageError("messages must be a non-empty array", details={"param": "messages"})
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str) or role not in _ROLES:
            raise UsageError(
                f"messages[{index}] must be a message with a role",
                details={"param": f"messages[{index}]"},
            )
    where = f"messages[{len(messages) - 1}]"
    last = messages[-1]
    if last["role"] != "user":
        raise UsageError(
            "the last message must be the user's, holding the input as JSON text",
            details={"param": f"{where}.role"},
        )
    content = last.get("content")
    where += ".content"
    if isinstance(content, list):
        content = _text_of(content, where)
    if not isinstance(content, str):
        raise UsageError(
            f"{where} must be the input as JSON text (a string, or text parts)",
            details={"param": where},
        )
    raw = content.encode("utf-8")
    try:
        if len(raw) > INLINE_PARSE_BYTES:
            return where, await to_thread.run_sync(parse_body, raw)
        return where, parse_body(raw)
    except UsageError as exc:
        raise UsageError(
            f"{where} must be the input as JSON text: {exc.message.removeprefix('the ')}",
            details={"param": where, **exc.details},
        ) from None


def _text_of(parts: list[Any], where: str) -> str:
    """Text parts joined (as clients split a long text); any other part is refused."""
    texts: list[str] = []
    for index, part in enumerate(parts):
        if not (isinstance(part, dict) and part.get("type") == "text"):
            kind = part.get("type") if isinstance(part, dict) else None
            shown = printable(kind[:40], 40) if isinstance(kind, str) else "not a text part"
            raise UsageError(
                f"{where}[{index}]: only text parts hold an input ({shown})",
                code="unsupported_parameter",
                details={"param": f"{where}[{index}]"},
            )
        text = part.get("text")
        if not isinstance(text, str):
            raise UsageError(
                f"{where}[{index}].text must be a string", details={"param": f"{where}[{index}]"}
            )
        texts.append(text)
    return "".join(texts)


async def _target(model: str, shared: Shared) -> tuple[str, str | None]:
    """(capability, agent id or None: routed) named by `model`."""
    if ":" in model:
        agent_id, capability = model.split(":", 1)
        if "/" not in agent_id or not capability:
            raise UsageError(
                "model is a capability, an agent (org/name) or org/name:capability",
                details={"param": "model"},
            )
        return capability, agent_id
    if "/" not in model:
        return model, None
    agent = await shared.run(shared.calls.lookups.agent, model)
    claimed = agent.capabilities
    if len(claimed) != 1:
        models = [agent_model(model, claimed, capability) for capability in claimed]
        raise UsageError(
            f"{model} claims several capabilities: name one, as " + ", ".join(models[:10]),
            code="ambiguous_model",
            details={"param": "model", "models": models},
        )
    return claimed[0], model


async def chat_completions(request: Request, who: Bearer, shared: Shared) -> Response:
    where: str | None = None
    try:
        body = body_object(await read_json(request, shared.max_body_bytes), "the body")
        _check_parameters(body)
        if "model" not in body:
            raise UsageError("model is required", details={"param": "model"})
        try:
            model = id_text(body["model"], "model", "a capability or an agent id")
        except UsageError as exc:
            raise UsageError(exc.message, details={"param": "model"}) from None
        where, input_ = await _user_input(body.get("messages"))
        capability, agent_id = await _target(model, shared)
        parent = caller_context(request.headers.getlist("traceparent"))

        def call(started: Started | None = None) -> Awaitable[dict[str, Any]]:
            if agent_id is None:
                return shared.calls.route(
                    who.name, capability, input_, parent=parent, started=started
                )
            return shared.calls.invoke(
                who.name, agent_id, capability, input_, parent=parent, started=started
            )

        if body.get("stream") is True:
            options = body.get("stream_options") or {}
            return await stream_completion(
                shared,
                capability,
                call,
                include_usage=options.get("include_usage") is True,
                answer_factor=ANSWER_FACTOR,
            )
        return await observed(shared, capability, call(), _encode)
    except InvalidInput as exc:  # the input broke the contract: it came from `where`
        return openai_error(exc, where)
    except HolonError as exc:
        return openai_error(exc)


async def _encode(body: dict[str, Any], limit: int) -> Response:
    if count_nodes(body.get("output"), LARGE_NODES) > LARGE_NODES:
        text = await to_thread.run_sync(_completion, body)
    else:
        text = _completion(body)
    content = text.encode()
    if len(content) > limit * ANSWER_FACTOR:
        raise answer_too_large(body, len(content), limit * ANSWER_FACTOR)
    return Response(content, media_type="application/json")


def _completion(body: dict[str, Any]) -> str:
    envelope = {key: value for key, value in body.items() if key != "output"}
    answer: dict[str, Any] = {
        "id": f"chatcmpl-{body['request_id']}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body["agent"],
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": dumps(body["output"]), "refusal": None},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "holon": envelope,
    }
    usage = completion_usage(body)
    if usage is not None:
        answer["usage"] = usage
    return dumps(answer)


ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/models",
        CALLER,
        list_models,
        "the OpenAI front door's models: the capabilities the caller's mandates name and the "
        "agents they allow (docs/gateway.md, OpenAI front door)",
        response=MODELS_SCHEMA,
        errors=openai_error,
        error_schema=ERROR_SCHEMA,
    ),
    Endpoint(
        "POST",
        "/v1/chat/completions",
        CALLER,
        chat_completions,
        "the OpenAI front door: a chat completion is a live call (a capability routed, or "
        "one agent) under the caller's mandates; the last user message is the input as JSON",
        request=CHAT_SCHEMA,
        response=COMPLETION_SCHEMA,
        events="with stream true: chat.completion.chunk events, then data: [DONE] "
        "(docs/gateway.md, Streaming)",
        statuses=(402, 404, 413, 422, 429, 502, 504),
        headers=(
            (
                "traceparent",
                "the caller's W3C trace context, continued as on /invoke (docs/gateway.md, "
                "Tracing)",
            ),
        ),
        errors=openai_error,
        error_schema=ERROR_SCHEMA,
    ),
]
