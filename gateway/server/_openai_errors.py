"""The OpenAI front door's errors: OpenAI's shape, the statuses its SDKs map to exceptions.

Every error of `/v1/models` and `/v1/chat/completions`, the token's refusal
included, is ``{"error": {"message", "type", "code", "param", "details"}}``:
`code` is holon's code (`no_mandate`, `budget_exhausted`, `invalid_input`…),
`param` the request parameter at fault (`model`, `messages[1].content`,
`stream`…) or null, `details` holon's details (the SDKs keep unknown keys).
The status is holon's own, which the `openai` SDKs turn into their classes:
400 `BadRequestError`, 401 `AuthenticationError`, 403
`PermissionDeniedError` (a mandate's refusal), 404 `NotFoundError`, 422
`UnprocessableEntityError`, 429 `RateLimitError` (with `Retry-After`),
5xx `InternalServerError`, and 402 (a budget) their base `APIStatusError`:
OpenAI answers an exhausted quota with 429, but the SDKs retry a 429 and
waiting does not refill a budget.

`x-should-retry` tells the SDKs whether retrying can help (they obey it
before their own rules): `false` for the caller's own errors and an
agent's answer outside the contract or the protocol; a rate limit, an
unavailable store, a timeout, an unreachable or failing agent is left to
the client's policy. Each retry is a live call of its own (a
ledger row).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from gateway.web import error_headers
from schema.errors import HolonError
from schema.jsontext import dumps

__all__ = ["ERROR_SCHEMA", "error_object", "openai_error"]

_TYPES = {
    401: "authentication_error",
    402: "insufficient_quota",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
}
# 5xx codes a retry may help with: the agent may answer next time.
_RETRYABLE = frozenset({"timeout", "unreachable", "agent_unreachable", "agent_error"})

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "OpenAI's error shape; `code` is holon's error code",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type", "code", "param"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "code": {"type": "string"},
                "param": {"type": ["string", "null"]},
                "details": {"type": "object"},
            },
        }
    },
}


def error_object(error: HolonError, param: str | None = None) -> dict[str, Any]:
    """`error` as OpenAI's error object (the `error` of its body, or of a stream's error
    event); `param`: the parameter at fault (else `details.param`)."""
    body = error.to_body()["error"]
    status = error.http_status
    named = body["details"].get("param")
    if param is None and isinstance(named, str):
        param = named
    kind = _TYPES.get(status) or ("server_error" if status >= 500 else "invalid_request_error")
    return {
        "message": body["message"],
        "type": kind,
        "code": body["code"],
        "param": param,
        "details": body["details"],
    }


def openai_error(error: HolonError, param: str | None = None) -> Response:
    """`error` in OpenAI's shape; `param`: the parameter at fault (else `details.param`)."""
    headers = error_headers(error)
    retryable = error.http_status in (429, 503) or error.code in _RETRYABLE
    if not retryable:
        headers["x-should-retry"] = "false"
    return Response(
        dumps({"error": error_object(error, param)}),
        status_code=error.http_status,
        media_type="application/json",
        headers=headers,
    )
