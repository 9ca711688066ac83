"""The `holon-http` wire protocol: the one request builder, and reading an answer.

`build_request` is the only place a request to an agent is made, for live
calls, eval calls and `holon test` alike: the agent cannot tell them apart.
It takes no enforced limits on purpose: the headers carry the agent's *own*
declared limits, and the gateway's caps stay on the gateway's side. Every
call carries a W3C `traceparent` (agents._trace), live or eval.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agents._a2a import A2ATarget, a2a_request
from agents._limits import MAX_REQUEST_BYTES
from agents._manifest import Manifest
from agents._openai import CHAT_PATH, chat_request
from agents._outcome import Usage
from agents._trace import TRACEPARENT, fresh_traceparent
from agents._transports import ASGI_BASE_URL
from schema.errors import PayloadTooLarge
from schema.jsontext import JSONValue, decimal_text, dumps

__all__ = [
    "USER_AGENT",
    "AnswerError",
    "PreparedRequest",
    "agent_headers",
    "bounded_request",
    "build_request",
    "METADATA_LIMIT",
    "endpoint_url",
    "probe_headers",
    "read_answer",
    "read_metadata",
]

USER_AGENT = "holon/0.1"

_MAX_COUNT = 2**63 - 1  # token counts are stored as 64-bit integers
METADATA_LIMIT = 4096  # an answer's `metadata`, as JSON text (UTF-8 bytes), kept whole
METADATA_HEAD = 512  # characters of the JSON text kept of a larger one
_MAX_MONEY_TEXT = 40


@dataclass(frozen=True)
class PreparedRequest:
    """Exactly what goes on the wire (Host and Content-Length are added by the client)."""

    method: str
    url: str
    headers: dict[str, str]
    body: bytes


def agent_headers(
    agent: Manifest,
    capability: str,
    *,
    request_id: str,
    secret: str | None,
    traceparent: str | None = None,
) -> dict[str, str]:
    """The Holon headers every protocol sends, in a fixed order.

    `traceparent`: the call's W3C trace context (agents._trace); a fresh one
    when not given, so every call carries one.

    Limits are the agent's own declaration (omitted when it declared none),
    formatted the same way in every mode: money as plain decimal text, the
    deadline in whole milliseconds.
    """
    _check_token(capability, "capability")
    _check_token(request_id, "request_id")
    traceparent = traceparent or fresh_traceparent()
    _check_token(traceparent, "traceparent")
    if secret is not None and not _is_header_safe(secret):
        raise ValueError("the agent secret must be printable ASCII without spaces")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Holon-Request-Id": request_id,
        "Holon-Capability": capability,
        TRACEPARENT: traceparent,
    }
    if agent.limits.max_cost_usd is not None:
        headers["Holon-Max-Cost-Usd"] = decimal_text(agent.limits.max_cost_usd)
    if agent.limits.timeout_s is not None:
        headers["Holon-Deadline-Ms"] = str(int(agent.limits.timeout_s * 1000))
    if secret is not None:
        headers["Authorization"] = f"Bearer {secret}"
    return headers


def probe_headers(secret: str | None) -> dict[str, str]:
    """Headers of the identity probe and the agent-card fetch (GET, no body)."""
    headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
    if secret is not None:
        if not _is_header_safe(secret):
            raise ValueError("the agent secret must be printable ASCII without spaces")
        headers["Authorization"] = f"Bearer {secret}"
    return headers


def _is_header_safe(text: str) -> bool:
    return bool(text) and text.isascii() and text.isprintable() and " " not in text


def secret_problem(secret: str) -> str | None:
    """Why `secret` cannot be an agent's bearer secret, or None when it can.

    It travels as `Authorization: Bearer <secret>`: printable ASCII, no spaces.
    Checked where secrets are set, so a bad one never reaches a call.
    """
    if len(secret) > 4096:
        return "a secret is at most 4096 characters"
    if not _is_header_safe(secret):
        return "a secret is printable ASCII without spaces (it is sent as an HTTP header)"
    return None


def _check_token(text: str, what: str) -> None:
    # Caller bugs, raised as such: a newline here would be header injection.
    if not isinstance(text, str) or not _is_header_safe(text):
        raise ValueError(f"{what} must be non-empty printable ASCII without spaces: {text!r}")


def endpoint_url(agent: Manifest, path: str = "") -> str:
    """The agent's URL (for `asgi:` the in-process origin), `path` appended to its path.

    ``https://h/agent/`` + ``/.well-known/holon-agent`` is
    ``https://h/agent/.well-known/holon-agent``; a query string stays a query string.
    """
    base = ASGI_BASE_URL + "/" if agent.protocol == "asgi" else agent.endpoint
    if not path:
        return base
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + path, parts.query, ""))


def build_request(
    agent: Manifest,
    capability: str,
    input: JSONValue,
    *,
    request_id: str,
    secret: str | None,
    a2a_target: A2ATarget | None = None,
    traceparent: str | None = None,
    output_schema: dict[str, Any] | None = None,
) -> PreparedRequest:
    """The request for one call, identical for live and eval calls (request id aside).

    `holon-http` and `asgi`: ``POST <endpoint>`` with body
    ``{"capability": ..., "input": ...}``. `a2a`: the JSON-RPC message to the
    interface `a2a_target` chose from the agent card (default: A2A 1.0 at the
    endpoint). `openai-chat`: ``POST <endpoint>/chat/completions`` with the
    completion request (`agents._openai`), whose `response_format` is
    `output_schema` (the active suite's) when given. (`mcp` messages are built by
    `agents._mcp_calls` from the same headers.) Raises ValueError/TypeError
    when `input` is not JSON (a caller bug), and `schema.errors.PayloadTooLarge`
    when the body would be over `MAX_REQUEST_BYTES` (the cap applies to what holon writes).
    """
    headers = agent_headers(
        agent, capability, request_id=request_id, secret=secret, traceparent=traceparent
    )
    if agent.protocol == "a2a":
        target = a2a_target or A2ATarget(url=agent.endpoint, version="1.0")
        body, extra = a2a_request(target, capability, input, request_id=request_id)
        headers.update(extra)
        return PreparedRequest("POST", target.url, headers, bounded_request(body))
    if agent.protocol == "openai-chat":
        body = chat_request(agent, capability, input, output_schema)
        return PreparedRequest(
            "POST", endpoint_url(agent, CHAT_PATH), headers, bounded_request(body)
        )
    body = dumps({"capability": capability, "input": input}).encode()
    return PreparedRequest("POST", endpoint_url(agent), headers, bounded_request(body))


def bounded_request(body: bytes) -> bytes:
    if len(body) > MAX_REQUEST_BYTES:
        raise PayloadTooLarge(
            f"the request to the agent would be {len(body)} bytes, more than the "
            f"{MAX_REQUEST_BYTES} holon sends",
            details={"bytes": len(body), "limit": MAX_REQUEST_BYTES},
        )
    return body


class AnswerError(Exception):
    """A 2xx answer that is not a valid `holon-http` response (`invalid_response`)."""


def read_answer(document: JSONValue) -> tuple[JSONValue, Usage | None]:
    """`output` and validated `usage` of a parsed 2xx body, or AnswerError.

    `usage` and each of its fields are optional; when present, token counts
    are non-negative integers and `cost_usd` a non-negative decimal string or
    number. Anything else is malformed: an agent that lies in the shape of its
    usage does not get its output graded.
    """
    if not isinstance(document, dict):
        raise AnswerError(f"expected a JSON object with 'output', got {_kind(document)}")
    if "output" not in document:
        raise AnswerError("response has no 'output'")
    usage = document.get("usage")
    if usage is None:
        return document["output"], None
    if not isinstance(usage, dict):
        raise AnswerError(f"'usage' must be an object, got {_kind(usage)}")
    return document["output"], Usage(
        input_tokens=_count(usage.get("input_tokens"), "input_tokens"),
        output_tokens=_count(usage.get("output_tokens"), "output_tokens"),
        cost_usd=_reported_cost(usage.get("cost_usd")),
    )


def read_metadata(document: JSONValue) -> JSONValue:
    """An answer's `metadata` (None when absent), bounded: the agent's own notes on its
    answer (a model name, a trace link), for operators to read in reports.

    Never graded and never a reason to refuse the answer. Untrusted: its JSON text is
    kept whole up to `METADATA_LIMIT` bytes; past that, as
    `{"$truncated": {"bytes", "sha256", "head"}}` (its size, the sha256 of its JSON
    text and that text's first `METADATA_HEAD` characters), as a stored output is.
    """
    if not isinstance(document, dict):
        return None
    value = document.get("metadata")
    if value is None:
        return None
    text = dumps(value)
    data = text.encode()
    if len(data) <= METADATA_LIMIT:
        return value
    return {
        "$truncated": {
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "head": text[:METADATA_HEAD],
        }
    }


def _count(value: Any, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MAX_COUNT:
        raise AnswerError(f"usage.{name} must be a non-negative integer")
    return value


def _reported_cost(value: Any) -> Decimal | None:
    """A reported cost, as plain decimal text of at most 40 characters would write it.

    A number in exponent form is taken only when it is such an amount
    (`1.5e-3` is `0.0015`), and is kept as that plain amount, so money is
    written the same way wherever it goes (`1E+4000` is not an amount).
    """
    if value is None:
        return None
    bad = "usage.cost_usd must be a non-negative decimal string or number"
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise AnswerError(bad)
    if isinstance(value, str):
        if not _is_plain_decimal(value):
            raise AnswerError(bad)
        return Decimal(value)
    cost = Decimal(value)
    if not cost.is_finite() or cost < 0:
        raise AnswerError(bad)
    text = decimal_text(cost)
    if not _is_plain_decimal(text):
        raise AnswerError(bad)
    return Decimal(text)


def _is_plain_decimal(text: str) -> bool:
    """Digits with at most one point: no sign, exponent, NaN, spaces or underscores."""
    if not text or len(text) > _MAX_MONEY_TEXT:
        return False
    whole, _, fraction = text.partition(".")
    return (whole + fraction).isascii() and (whole + fraction).isdigit() and bool(whole)


def _kind(value: Any) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if value is None:
        return "null"
    return "a number"
