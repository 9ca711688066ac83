"""In-process (`asgi:`) agents for the executor's tests, imported by endpoint string."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

EVENTS: list[str] = []


@asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
    EVENTS.append("startup")
    yield {"greeting": "hello from lifespan"}
    EVENTS.append("shutdown")


async def _call(request: Request) -> Response:
    body = json.loads(await request.body())
    return JSONResponse(
        {
            "output": {
                "echo": body["input"],
                "greeting": request.state.greeting,
                "headers": dict(request.headers.items()),
            },
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


async def _identity(request: Request) -> Response:
    return JSONResponse({"id": "acme/inproc", "version": "3.0.0", "capabilities": ["echo"]})


async def _fail(request: Request) -> Response:
    raise RuntimeError("in-process agent bug")


app = Starlette(
    routes=[
        Route("/", _call, methods=["POST"]),
        Route("/.well-known/holon-agent", _identity, methods=["GET"]),
    ],
    lifespan=_lifespan,
)

raising_app = Starlette(routes=[Route("/", _fail, methods=["POST"])])


async def incomplete_app(scope: Any, receive: Any, send: Any) -> None:
    """Starts a response and returns without finishing it: outside the ASGI contract."""
    if scope["type"] == "http":
        await send({"type": "http.response.start", "status": 200, "headers": []})


async def no_lifespan_app(scope: Any, receive: Any, send: Any) -> None:
    """A bare app that refuses the lifespan scope (as many do): still callable."""
    if scope["type"] != "http":
        raise RuntimeError("only http")
    await receive()
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b'{"output": "bare"}'})


@asynccontextmanager
async def _broken_lifespan(app: Starlette) -> AsyncIterator[None]:
    raise RuntimeError("database is down")
    yield  # type: ignore[unreachable]  # makes this an async generator


failing_startup_app = Starlette(routes=[], lifespan=_broken_lifespan)

not_an_app = 42


SEEN: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []


async def recording_app(scope: Any, receive: Any, send: Any) -> None:
    """Keeps the scope (without its state) and every message it received, answers 200."""
    if scope["type"] != "http":
        return  # no lifespan: the executor carries on without one
    messages = []
    while True:
        message = await receive()
        messages.append(message)
        if not message.get("more_body"):
            break
    SEEN.append(({k: v for k, v in scope.items() if k != "state"}, messages))
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b'{"output": 1}'})
