"""Reading an agent's response body without trusting it: bounded in bytes and in depth.

The body is pulled chunk by chunk from the stream and decoded incrementally;
the read stops as soon as one byte more than the cap has been seen, so a
50 MB answer costs at most the cap (plus one chunk) in memory. Compressed
bodies are inflated with an output bound, so a small gzip bomb cannot expand
past the cap either. This is the only place agent bytes become JSON.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterable
from typing import Any

from schema.jsontext import JSONValue, NumberError, format_path, loads, max_depth

__all__ = ["BodyError", "parse_json", "read_bounded", "read_prefix"]


class BodyError(Exception):
    """The body is not acceptable; `str()` is a short detail (`invalid_response`)."""


class _Identity:
    def feed(self, data: bytes, room: int) -> bytes:
        return data

    def flush(self) -> bytes:
        return b""


class _Inflate:
    """gzip or zlib-wrapped deflate, whichever header the stream carries."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 32)

    def feed(self, data: bytes, room: int) -> bytes:
        try:
            # With max_length, input that would yield more stays in
            # unconsumed_tail; returning `room` bytes already means "too large".
            return self._z.decompress(data, max(room, 1))
        except zlib.error as exc:
            raise BodyError(f"body does not decode as its Content-Encoding: {exc}") from None

    def flush(self) -> bytes:
        try:
            return self._z.flush()
        except zlib.error as exc:
            raise BodyError(f"body does not decode as its Content-Encoding: {exc}") from None


def _decoder(content_encoding: str | None) -> _Identity | _Inflate:
    encoding = (content_encoding or "").strip().lower()
    if encoding in ("", "identity"):
        return _Identity()
    if encoding in ("gzip", "x-gzip", "deflate"):
        return _Inflate()
    # We never send Accept-Encoding; anything else is outside the protocol.
    raise BodyError(f"unsupported Content-Encoding {encoding[:40]!r}")


async def read_bounded(
    chunks: AsyncIterable[bytes], limit: int, *, content_encoding: str | None = None
) -> bytes:
    """The whole decoded body, or BodyError once it exceeds `limit` bytes.

    Stops pulling from `chunks` at the first chunk that crosses the cap: the
    caller closes the stream (and with it the connection) right after.
    """
    decoder = _decoder(content_encoding)
    body = bytearray()
    async for chunk in chunks:
        if not chunk:
            continue
        body += decoder.feed(chunk, limit + 1 - len(body))
        if len(body) > limit:
            raise BodyError(f"body larger than {limit} bytes (cut at the cap)")
    body += decoder.flush()
    if len(body) > limit:
        raise BodyError(f"body larger than {limit} bytes (cut at the cap)")
    return bytes(body)


async def read_prefix(chunks: AsyncIterable[bytes], size: int) -> bytes:
    """At most `size` raw bytes of a body (for error details); stops as soon as it has them."""
    out = bytearray()
    async for chunk in chunks:
        out += chunk[: size - len(out)]
        if len(out) >= size:
            break
    return bytes(out)


def parse_json(data: bytes, depth_limit: int) -> JSONValue:
    """Decimal-exact JSON of an agent body, or BodyError with a printable reason.

    Rejects: invalid UTF-8 or JSON, NaN/Infinity, numbers beyond the limits
    of `schema.numbers` (naming the number's JSON path), nesting deeper than
    `depth_limit`, and unpaired UTF-16 surrogates (which Python's parser
    accepts but no database or UTF-8 encoder can store).
    """
    try:
        value = loads(data)
    except RecursionError:
        raise BodyError(f"JSON nested deeper than {depth_limit} levels") from None
    except NumberError as exc:
        raise BodyError(f"body at {format_path(exc.path)}: {exc.problem}") from None
    except ValueError as exc:
        raise BodyError(f"body is not JSON: {exc}") from None
    # Depth cannot exceed the number of openers: counting them is C-fast and
    # spares the walk for the usual small answer.
    if (
        data.count(b"[") + data.count(b"{") > depth_limit
        and max_depth(value, depth_limit) > depth_limit
    ):
        raise BodyError(f"JSON nested deeper than {depth_limit} levels")
    if b"\\ud" in data or b"\\uD" in data:
        _check_strings(value)
    return value


def _check_strings(value: Any) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            _encodable(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                _encodable(key)
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)


def _encodable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BodyError("JSON text contains an unpaired UTF-16 surrogate") from None
