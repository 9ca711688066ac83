"""One HTTP request and its bounded answer, with every failure named by an outcome code.

This is where transport exceptions become classifications, so everything
above it deals in `CallFailure` only:

- nothing came back (refused, DNS, TLS, connect timeout, connection closed
  or reset before any response byte): `unreachable`;
- bytes came back that are not HTTP (a garbage status line, oversized
  headers), or an in-process app broke the ASGI contract: `invalid_response`;
- a status other than 2xx (3xx included: redirects are never followed):
  `agent_error`, with a short prefix of the body for the detail;
- the body is over the cap, undecodable, or the connection dropped mid-body:
  `invalid_response`.

An address guard's `Refused` (raised before anything is dialled) is not the
agent's doing: it propagates.

The deadline is not handled here: the caller wraps the whole exchange in one
`asyncio.timeout`, so connect + headers + body share it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agents._aiohttp import aiohttp
from agents._outcome import OutcomeCode, printable
from agents._reader import BodyError, read_bounded, read_prefix
from agents._transports import Response, Transport, target
from agents._wire import PreparedRequest
from schema.errors import Refused

__all__ = ["Answer", "BodyReader", "CallFailure", "Progress", "exchange"]

# How a 2xx body is read when it is not read whole (an agent whose answer streams).
BodyReader = Callable[[Response], Awaitable[bytes]]

logger = logging.getLogger(__name__)

_ERROR_BODY_PREFIX = 200
_ERROR_BODY_WAIT_S = 1.0


class CallFailure(Exception):
    """A classified failure of one attempt."""

    def __init__(self, code: OutcomeCode, detail: str, http_status: int | None = None) -> None:
        super().__init__(detail)
        self.code: OutcomeCode = code
        self.detail = printable(detail)
        self.http_status = http_status


@dataclass
class Progress:
    """How far an exchange got, readable after a timeout interrupted it."""

    http_status: int | None = None


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    headers: dict[bytes, str] = field(default_factory=dict)  # those asked for, when sent


def _root(exc: BaseException) -> BaseException:
    """The innermost cause with a message (a timeout's chain ends in bare, silent ones)."""
    root = exc
    seen = {id(exc)}
    while exc.__cause__ is not None and id(exc.__cause__) not in seen:
        exc = exc.__cause__
        seen.add(id(exc))
        if str(exc):
            root = exc
    return root


def describe(exc: BaseException) -> str:
    """`Type: message` of the innermost cause (what actually went wrong on the socket)."""
    root = _root(exc)
    text = str(root)
    return f"{type(root).__name__}: {text}" if text else type(root).__name__


def _before_response(exc: Exception, in_process: bool) -> OutcomeCode:
    if in_process:
        return "invalid_response"
    chain: list[BaseException] = [exc]
    while chain[-1].__cause__ is not None and len(chain) < 8:
        chain.append(chain[-1].__cause__)
    if any(isinstance(e, aiohttp.ClientResponseError) for e in chain):
        return "invalid_response"
    return "unreachable"


async def exchange(
    transport: Transport,
    prepared: PreparedRequest,
    *,
    max_bytes: int,
    connect_timeout_s: float,
    in_process: bool = False,
    progress: Progress | None = None,
    keep_headers: tuple[bytes, ...] = (),
    read_body: BodyReader | None = None,
) -> Answer:
    """Send `prepared`, read its 2xx body within `max_bytes`; else raise CallFailure.

    `keep_headers`: response header names (lower case) whose first values the
    answer carries (MCP's session id and content type). `read_body`: how a 2xx
    body is read instead (a stream's events, agents._chat_stream), with its own
    bounds; what it raises other than CallFailure is a broken body."""
    to = target(prepared.url)
    # Host and Content-Length are set here, so an in-process app sees them too.
    # The names go out in lower case, as they did when httpx carried the request.
    headers = {"host": to.netloc}
    for name, value in prepared.headers.items():
        headers[name.lower()] = value
    if prepared.body or prepared.method in ("POST", "PUT", "PATCH"):
        headers["content-length"] = str(len(prepared.body))
    try:
        response = await transport.send(
            prepared.method,
            to,
            headers,
            prepared.body,
            connect_timeout_s=connect_timeout_s,
        )
    except Refused:  # the address guard forbade the connection: policy, not the agent
        raise
    except Exception as exc:  # whatever the peer made the transport raise
        code = _before_response(exc, in_process)
        where = "in-process app failed" if in_process else "no response"
        raise CallFailure(code, f"{where}: {describe(exc)}") from None
    status = response.status
    if progress is not None:
        progress.http_status = status
    try:
        if not 200 <= status < 300:
            raise CallFailure("agent_error", await _error_detail(response), status)
        try:
            if read_body is not None:
                body = await read_body(response)
            else:
                body = await read_bounded(
                    response.chunks(),
                    max_bytes,
                    content_encoding=response.header(b"content-encoding"),
                )
        except CallFailure as failure:
            failure.http_status = status
            raise
        except BodyError as exc:
            raise CallFailure("invalid_response", str(exc), status) from None
        except Exception as exc:  # reset, truncated chunking, payload errors mid-body
            raise CallFailure(
                "invalid_response", f"connection failed mid-body: {describe(exc)}", status
            ) from None
        kept = {name: v for name in keep_headers if (v := response.header(name)) is not None}
        return Answer(status, body, kept)
    finally:
        try:
            await response.aclose()
        except Exception as exc:  # closing a broken connection may complain; it is closed
            logger.debug("closing an agent response failed: %s", type(exc).__name__)


async def _error_detail(response: Response) -> str:
    status = response.status
    if 300 <= status < 400:
        location = response.header(b"location") or ""
        return f"HTTP {status} redirect to {location[:200]!r} (redirects are not followed)"
    try:
        # Briefly: the status is the answer, and an agent that hangs after an
        # error status must not turn its agent_error into a timeout.
        async with asyncio.timeout(_ERROR_BODY_WAIT_S):
            prefix = await read_prefix(response.chunks(), _ERROR_BODY_PREFIX)
    except Exception:  # TimeoutError included: a broken error body adds nothing
        prefix = b""
    text = prefix.decode("utf-8", errors="replace").strip()
    return f"HTTP {status}" + (f": {text}" if text else "")
