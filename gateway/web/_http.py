"""Request bodies in, JSON out, and the one error shape (`{"error": {code, message, details}}`).

Bodies are bounded before they are read whole (`max_body_bytes`), parsed
with exact numbers of bounded size (`schema.numbers`: a number past the
limits is a `400` naming its JSON path), bounded in depth, and refused when
a string holds a lone UTF-16 surrogate (no UTF-8 text can carry one, so it
would fail the first write of the value: the response, a log line, the
store). A body over 64 KiB is parsed in a worker thread, so parsing a large
one never holds up the event loop. Path and query parameters are bounded in
length and refused with a control character (PostgreSQL refuses NUL in
text). A request is as untrusted as an agent's answer: every value is
checked here, before any handler uses it, with a 400 that names the
parameter or the JSON path.
"""

from __future__ import annotations

import logging
from typing import Any

from anyio import to_thread
from starlette.requests import Request
from starlette.responses import Response

from gateway._params import MAX_PARAM_CHARS, has_control
from schema.errors import HolonError, PayloadTooLarge, UsageError
from schema.jsontext import JSONValue, NumberError, dumps, format_path, loads, max_depth

log = logging.getLogger(__name__)

__all__ = [
    "body_object",
    "check_params",
    "error_headers",
    "error_response",
    "json_response",
    "query_int",
    "read_json",
    "renamed_query",
]

MAX_DEPTH = 64
MAX_INT_DIGITS = 18  # a query integer (before int(), which refuses over 4,300 digits)


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # only a lone surrogate cannot be encoded
        return True
    return False


INLINE_PARSE_BYTES = 64 * 1024  # larger bodies are parsed in a worker thread


def json_response(
    body: JSONValue, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json", headers=headers)


def renamed_query(request: Request, new: str, old: str) -> tuple[str | None, dict[str, str]]:
    """A query parameter that was renamed: its value under either name, and the response
    headers that tell a client using the old name (`Deprecation`, and a `Warning` that names
    the new one). The old name is accepted for one release (docs/glossary.md)."""
    params = request.query_params
    value, legacy = params.get(new), params.get(old)
    if legacy is None:
        return value, {}
    if value is not None and value != legacy:
        raise UsageError(f"{old} is the old name of {new}: give one, not two different values")
    log.info("deprecated query parameter %s (now %s) on %s", old, new, request.url.path)
    warning = f'299 holon "the query parameter {old} is deprecated: use {new}"'
    return legacy, {"Deprecation": "true", "Warning": warning}


def error_response(error: HolonError) -> Response:
    return Response(
        dumps(error.to_body()),
        status_code=error.http_status,
        media_type="application/json",
        headers=error_headers(error),
    )


def error_headers(error: HolonError) -> dict[str, str]:
    """The headers of an error's response, whatever shape its body has (a front door's)."""
    headers: dict[str, str] = {}
    if error.http_status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    # An error that says when to come back (a rate limit) says it in the standard header
    # too: whole seconds, at least 1 (RFC 9110, 10.2.3).
    retry = error.details.get("retry_after_s")
    if isinstance(retry, int) and not isinstance(retry, bool):
        headers["Retry-After"] = str(max(1, retry))
    return headers


async def read_json(request: Request, limit: int) -> Any:
    """The request's JSON body, at most `limit` bytes and MAX_DEPTH deep."""
    raw = await read_body(request, limit)
    if not raw:
        raise UsageError("the request needs a JSON body")
    if len(raw) > INLINE_PARSE_BYTES:
        return await to_thread.run_sync(parse_body, raw)
    return parse_body(raw)


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body as bytes, at most `limit` of them (413 past it, read or declared)."""
    declared = request.headers.get("content-length")
    if (
        declared is not None
        and declared.isascii()
        and declared.isdigit()
        and (len(declared) > MAX_INT_DIGITS or int(declared) > limit)
    ):
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
    return b"".join(chunks)


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
    # A lone surrogate arrives only as a \u escape (its UTF-8 form is not UTF-8).
    where = _surrogate_at(value) if b"\\u" in raw else None
    if where is not None:
        raise UsageError(
            f"the body has a lone UTF-16 surrogate (not text) at {where}",
            details={"path": where},
        )
    return value


def _surrogate_at(value: Any, path: tuple[str | int, ...] = ()) -> str | None:
    """The JSON path of the first key or string holding a lone surrogate, or None."""
    if isinstance(value, str):
        return format_path(path) if _has_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if _has_surrogate(key):
                return format_path((*path, key))  # which writes it as its escape
            found = _surrogate_at(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _surrogate_at(item, (*path, index))
            if found is not None:
                return found
    return None


def check_params(request: Request) -> None:
    """Every path and query parameter: at most MAX_PARAM_CHARS, no control characters.

    Run before the handler, so no handler meets a NUL (PostgreSQL refuses it
    in text) or a megabyte-long id. The path is percent-decoded by the
    server with replacement, so it never holds a lone surrogate.
    """
    found = [("path parameter", k, str(v)) for k, v in request.path_params.items()]
    found += [("query parameter", k, v) for k, v in request.query_params.multi_items()]
    for kind, name, value in found:
        for text in (name, value):
            if len(text) > MAX_PARAM_CHARS:
                raise UsageError(
                    f"{kind} {name[:40]!r} is over {MAX_PARAM_CHARS} characters",
                    details={"parameter": name[:40], "limit": MAX_PARAM_CHARS},
                )
            if has_control(text):
                raise UsageError(
                    f"{kind} {name[:40]!r} has a control character",
                    details={"parameter": name[:40]},
                )


def query_int(request: Request, name: str, default: int, low: int, high: int) -> int:
    """An integer query parameter from `low` to `high`; digits only, bounded before int()."""
    text = request.query_params.get(name)
    if text is None:
        return default
    # isdigit() alone admits "²" (int() refuses it) and other scripts' digits.
    plain = text.isascii() and text.isdigit() and len(text) <= MAX_INT_DIGITS
    if not plain or not low <= int(text) <= high:
        raise UsageError(
            f"query parameter {name} must be an integer from {low} to {high}",
            details={"parameter": name, "minimum": low, "maximum": high},
        )
    return int(text)


def body_object(body: Any, what: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise UsageError(f"{what} must be a JSON object")
    return body
