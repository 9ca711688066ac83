"""The request guard: the outermost ASGI middleware of the gateway.

Two jobs the server (uvicorn) does not do for us:

- **A body deadline.** uvicorn has no read timeout on a request body: a
  client that sends headers and a few bytes of a declared 100,000 held a
  connection for as long as it liked. Here the whole body must arrive within
  `timeout_s()` seconds of the request's start (HOLON_BODY_TIMEOUT_S), else
  the body reader raises `BodyTimeout` (408 in the one error shape). Any
  response sent before the body was read whole says `connection: close`, so
  the server closes the connection instead of waiting for the rest.
- **Quiet disconnects.** A client that goes away mid-request is no fault of
  ours: one INFO line, no traceback, never an internal error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schema.errors import BodyTimeout

log = logging.getLogger(__name__)

__all__ = ["BodyTimeout", "RequestGuard", "log_disconnect"]

_CLOSE = (b"connection", b"close")


def log_disconnect(method: str, path: str) -> None:
    log.info("client disconnected before the answer to %s %s", method, path)


def _declares_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", ()):
        if name == b"transfer-encoding":
            return True
        if name == b"content-length":
            return value.strip() not in (b"", b"0")
    return False


class RequestGuard:
    def __init__(self, app: ASGIApp, timeout_s: Callable[[], float]) -> None:
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.timeout_s()
        deadline = anyio.current_time() + limit
        body_done = not _declares_body(scope)

        async def timed_receive() -> Message:
            nonlocal body_done
            if body_done:  # the body is in: what is left is the wait for a disconnect
                return await receive()
            with anyio.move_on_after(deadline - anyio.current_time()) as waited:
                message = await receive()
            if waited.cancelled_caught:
                raise BodyTimeout(
                    f"the request body did not arrive within {limit:g} s",
                    details={"timeout_s": limit},
                    hint="send the whole body at once; HOLON_BODY_TIMEOUT_S sets the deadline",
                )
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            return message

        async def closing_send(message: Message) -> None:
            if message["type"] == "http.response.start" and not body_done:
                # The rest of the body would be read (or waited for) before the
                # next request on this connection: close it instead.
                headers = list(message.get("headers", []))
                if _CLOSE not in headers:
                    headers.append(_CLOSE)
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, timed_receive, closing_send)
        except (ClientDisconnect, anyio.EndOfStream, anyio.BrokenResourceError):
            log_disconnect(scope.get("method", "?"), scope.get("path", "?"))
