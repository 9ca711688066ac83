"""A gateway app called in-process (no socket): the streaming doors' fast tier.

`in_process_app` builds the app as `running_gateway` does, over a store with
the math.add suite, the in-process streamed adder (tests/gateway/server/
_stream_agent.py) and finance-bot's mandate for it. A sync client goes
through Starlette's TestClient (its lifespan in a portal thread), an async
one through `httpx.ASGITransport`, inside `lifespan` on the test's own loop.
A sync client (`sync_client`) calls the same app started on a portal's loop
(Starlette's TestClient wants another httpx).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import httpx
from anyio.from_thread import BlockingPortal
from starlette.applications import Starlette

from gateway.server import create_app
from gateway.settings import Settings
from records import Store
from tests.gateway.server._adder import adder_mandate, install_adder_suite
from tests.gateway.server._stream_agent import stream_agent_manifest

BASE_URL = "http://gateway"


def in_process_app(store: Store, root: Path, **mandate: Any) -> Starlette:
    install_adder_suite(store, root)
    store.agents.register(stream_agent_manifest())
    store.mandates.grant(adder_mandate(**mandate))
    return gateway_app(store, root)


def gateway_app(store: Store, root: Path) -> Starlette:
    """The gateway's app over `store`, as `running_gateway` builds it (no socket)."""
    settings = Settings.from_env(
        {
            "HOLON_HOME": str(root / "home"),
            "HOLON_EXAMPLES": "off",
            "HOLON_AGENT_NETWORKS": "any",
            "HOLON_PROBE_INTERVAL_S": "0",
            "HOLON_CANARY_SHARE": "0",
            "HOLON_CANARY_FLOOR": "0",
        }
    )
    return create_app(settings, store=store, eval_workers=0, cache_ttl_s=0.0)


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[httpx.AsyncClient]:
    """The app started on the running loop, and an async client calling it in-process."""
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
            yield client


def token(store: Store, role: str = "caller:finance-bot") -> str:
    return store.tokens.create(role)[1]


class _PortalTransport(httpx.BaseTransport):
    """A sync transport onto an ASGI app running on a portal's loop (the body whole)."""

    def __init__(self, portal: BlockingPortal, app: Starlette) -> None:
        self.portal = portal
        self.inner = httpx.ASGITransport(app=app)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        content = request.read()

        async def run() -> tuple[int, httpx.Headers, bytes]:
            forwarded = httpx.Request(
                request.method, request.url, headers=request.headers, content=content
            )
            response = await self.inner.handle_async_request(forwarded)
            return response.status_code, response.headers, await response.aread()

        status, headers, body = self.portal.call(run)
        return httpx.Response(status, headers=headers, content=body)


@contextmanager
def sync_client(app: Starlette) -> Iterator[httpx.Client]:
    """The app started on a portal's loop, and a sync client calling it in-process."""
    with anyio.from_thread.start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(app.router.lifespan_context(app)):
            transport = _PortalTransport(portal, app)
            with httpx.Client(transport=transport, base_url=BASE_URL) as client:
                yield client


async def raw_stream(
    app: Starlette,
    key: str,
    path: str,
    body: dict[str, Any],
    *,
    leave_after: int | None = None,
) -> list[tuple[float, bytes]]:
    """The body messages of one streamed request, timed; `leave_after`: the caller goes
    away after that many (the server learns it on its next receive)."""
    sent = json.dumps(body).encode()
    received: list[tuple[float, bytes]] = []
    gone = anyio.Event()
    asked = False

    async def receive() -> dict[str, Any]:
        nonlocal asked
        if not asked:
            asked = True
            return {"type": "http.request", "body": sent, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            assert message["status"] == 200, message
        elif message["type"] == "http.response.body" and message.get("body"):
            received.append((anyio.current_time(), message["body"]))
            if leave_after is not None and len(received) >= leave_after:
                gone.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"gateway"),
            (b"authorization", f"Bearer {key}".encode()),
            (b"content-type", b"application/json"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("gateway", 80),
    }
    await app(scope, receive, send)
    gone.set()
    return received
