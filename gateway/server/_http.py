"""Request bodies in, JSON out, and the one error shape (`{"error": {code, message, details}}`).

Bodies are bounded before they are read whole (`max_body_bytes`), parsed
with exact numbers of bounded size (`schema.numbers`: a number past the
limits is a `400` naming its JSON path), and bounded in depth: a request is
as untrusted as an agent's answer. A body over 64 KiB is parsed in a worker
thread, so parsing a large one never holds up the event loop.
"""

from __future__ import annotations

import logging
from typing import Any

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import Response

from schema.errors import HolonError, PayloadTooLarge, UsageError
from schema.jsontext import JSONValue, NumberError, dumps, format_path, loads, max_depth

log = logging.getLogger(__name__)

__all__ = ["PayloadTooLarge", "error_response", "json_response", "read_json"]

MAX_DEPTH = 64
INLINE_PARSE_BYTES = 64 * 1024  # larger bodies are parsed in a worker thread


def json_response(body: JSONValue, status: int = 200) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json")


def error_response(error: HolonError) -> Response:
    headers = {"WWW-Authenticate": "Bearer"} if error.http_status == 401 else None
    return Response(
        dumps(error.to_body()),
        status_code=error.http_status,
        media_type="application/json",
        headers=headers,
    )


async def read_json(request: Request, limit: int) -> Any:
    """The request's JSON body, at most `limit` bytes and MAX_DEPTH deep."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(f"the request body is over {limit} bytes", details={"limit": limit})
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(
                f"the request body is over {limit} bytes", details={"limit": limit}
            )
        chunks.append(chunk)
    raw = b"".join(chunks)
    if not raw:
        raise UsageError("the request needs a JSON body")
    if len(raw) > INLINE_PARSE_BYTES:
        return await to_thread.run_sync(parse_body, raw)
    return parse_body(raw)


def parse_body(raw: bytes) -> Any:
    """A request body's JSON value, or the UsageError that says what is wrong with it."""
    try:
        value = loads(raw)
    except RecursionError:
        value = None
        too_deep = True
    except NumberError as exc:
        path = format_path(exc.path)
        raise UsageError(f"the JSON body: {path}: {exc.problem}", details={"path": path}) from None
    except (ValueError, UnicodeError) as exc:
        raise UsageError(f"the body is not valid JSON: {exc}") from None
    else:
        too_deep = max_depth(value, MAX_DEPTH) > MAX_DEPTH
    if too_deep:
        raise UsageError(f"the JSON body is nested deeper than {MAX_DEPTH}")
    return value


def query_int(request: Request, name: str, default: int, low: int, high: int) -> int:
    text = request.query_params.get(name)
    if text is None:
        return default
    if not text.isdigit() or not low <= int(text) <= high:
        raise UsageError(f"query parameter {name} must be an integer from {low} to {high}")
    return int(text)


def body_object(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise UsageError(f"{what} must be a JSON object")
    return body
