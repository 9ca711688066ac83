"""The transports the executor talks through: one pooled HTTP transport, and in-process apps.

HTTP goes through httpx's transport API (`httpx.Request` in, streaming
`httpx.Response` out) over `httpx_aiohttp.AiohttpTransport`, an order of
magnitude faster than httpx's own pool at high concurrency. Requests are
handed to the transport directly rather than through `httpx.AsyncClient.send`:
the client layer adds only what the executor must not have (cookie
persistence, redirect and auth handling) and, with its cookie extraction,
costs about as much per call as everything else on our side together.

The aiohttp session under the transport is built here so that nothing is
added behind our back: no cookies (one agent must not influence what another
receives), no automatic Accept/Accept-Encoding/User-Agent headers, no
automatic decompression (the bounded reader inflates with a cap), no proxies
from the environment, and `allow_redirects=False` (set by the transport).

With an address guard (`agents._addresses`), the connector's resolver is a
`GuardedResolver`: the addresses the guard judged are the only ones dialled.
aiohttp dials an IP literal without asking its resolver, so the transport
judges a literal host itself, with the same guard, before the request goes
to aiohttp.

`asgi:` endpoints import operator code into the process; the app is imported
once per endpoint, its lifespan started (as uvicorn's `lifespan="auto"`
would), and called through `httpx.ASGITransport` with the same HTTP
semantics. Note that `httpx.ASGITransport` collects the app's whole body
before returning it: the response cap is still enforced, but an in-process
app's body is buffered (it is trusted operator code, registered only from the
CLI).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import aiohttp
import httpx
from aiohttp.abc import AbstractResolver
from httpx_aiohttp import AiohttpTransport

from agents._addresses import Address, AddressGuard, GuardedResolver, literal_address

__all__ = ["ASGI_BASE_URL", "AsgiLoadError", "Transports"]

logger = logging.getLogger(__name__)

ASGI_BASE_URL = "http://localhost"
"""The origin an in-process app sees requests come to."""

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


class AsgiLoadError(Exception):
    """An `asgi:` endpoint could not be imported or started; `str()` says why."""


class Transports:
    """Lazily built transports, bound to the event loop that first uses them."""

    def __init__(
        self,
        *,
        max_connections: int = 256,
        verify: bool = True,
        guard: AddressGuard | None = None,
        resolver: AbstractResolver | None = None,
    ) -> None:
        self._max_connections = max_connections
        self._verify = verify
        self._guard = guard
        self._resolver = GuardedResolver(guard, resolver)
        self._http: httpx.AsyncBaseTransport | None = None
        self._asgi: dict[str, _AsgiApp] = {}
        self._asgi_lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("an Executor belongs to the event loop it first ran in")

    def http(self) -> httpx.AsyncBaseTransport:
        """The shared HTTP transport (created on first use, inside the running loop)."""
        self._bind_loop()
        if self._http is None:
            ssl_context = httpx.create_ssl_context(verify=self._verify)
            limit = self._max_connections
            resolver = self._resolver

            def session() -> aiohttp.ClientSession:
                # Idle connections are dropped before common server keep-alive
                # timeouts (uvicorn: 5 s), so a reused one is rarely closed under us.
                # The DNS cache keeps what the guarded resolver returned: judged addresses.
                connector = aiohttp.TCPConnector(
                    limit=limit,
                    ssl=ssl_context,
                    ttl_dns_cache=10,
                    keepalive_timeout=4,
                    resolver=resolver,
                )
                return aiohttp.ClientSession(
                    connector=connector,
                    cookie_jar=aiohttp.DummyCookieJar(),
                    skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent"),
                    auto_decompress=False,
                    trust_env=False,
                )

            transport = AiohttpTransport(verify=ssl_context, client=session, trust_env=False)
            guard = self._guard
            self._http = transport if guard is None else _LiteralsJudged(transport, guard)
        return self._http

    async def lookup(self, host: str, port: int) -> list[Address]:
        """Every address `host` resolves to, through the connector's own resolver, unjudged
        (an IP literal is itself). Raises OSError when the name does not resolve."""
        self._bind_loop()
        address = literal_address(host)
        if address is not None:
            return [address]
        return [address for _, address in await self._resolver.lookup(host, port)]

    async def asgi(self, endpoint: str, *, startup_timeout_s: float) -> httpx.AsyncBaseTransport:
        """The transport to an `asgi:package.module:attribute` endpoint, importing it once.

        Raises AsgiLoadError (never caches a failure, so a fixed module loads next time).
        """
        self._bind_loop()
        cached = self._asgi.get(endpoint)
        if cached is not None:
            return cached.transport
        if self._asgi_lock is None:
            self._asgi_lock = asyncio.Lock()
        async with self._asgi_lock:
            cached = self._asgi.get(endpoint)
            if cached is None:
                cached = await _AsgiApp.load(endpoint, startup_timeout_s)
                self._asgi[endpoint] = cached
        return cached.transport

    async def aclose(self) -> None:
        apps, self._asgi = list(self._asgi.values()), {}
        for app in apps:
            await app.aclose()
        if self._http is not None:
            transport, self._http = self._http, None
            await transport.aclose()
        await self._resolver.close()


class _LiteralsJudged(httpx.AsyncBaseTransport):
    """The HTTP transport, with a request to an IP literal judged by the guard first
    (names are judged by the connector's resolver)."""

    def __init__(self, inner: httpx.AsyncBaseTransport, guard: AddressGuard) -> None:
        self._inner = inner
        self._guard = guard

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        address = literal_address(url.host)
        if address is not None:
            port = url.port or (443 if url.scheme == "https" else 80)
            self._guard(url.host, port, [address])
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def _import_app(endpoint: str) -> ASGIApp:
    spec = endpoint.removeprefix("asgi:")
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise AsgiLoadError(f"{endpoint!r} is not 'asgi:package.module:attribute'")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # operator code: any failure at import is "cannot load"
        raise AsgiLoadError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    for name in attribute.split("."):
        try:
            target = getattr(target, name)
        except AttributeError:
            raise AsgiLoadError(f"module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(target):
        raise AsgiLoadError(f"{endpoint!r} is not an ASGI application (not callable)")
    app: ASGIApp = target
    return app


class _AsgiApp:
    """One imported app: its transport, and its lifespan task when the app has one."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._state: dict[str, Any] = {}
        self._to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self.transport = httpx.ASGITransport(app=self._with_state, raise_app_exceptions=False)

    @classmethod
    async def load(cls, endpoint: str, startup_timeout_s: float) -> _AsgiApp:
        loaded = cls(_import_app(endpoint))
        try:
            await loaded._startup(startup_timeout_s)
        except BaseException:
            await loaded.aclose()
            raise
        return loaded

    async def _with_state(
        self,
        scope: MutableMapping[str, Any],
        receive: Callable[[], Awaitable[Any]],
        send: Callable[[Any], Awaitable[None]],
    ) -> None:
        # What the lifespan put in its state is visible to requests, as under uvicorn.
        await self._app({**scope, "state": dict(self._state)}, receive, send)

    async def _run_lifespan(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}}
        try:
            await self._app({**scope, "state": self._state}, self._to_app.get, self._send)
        except Exception as exc:
            # An app without lifespan support raises here; like uvicorn's "auto", carry on.
            logger.debug("ASGI app has no usable lifespan: %s", type(exc).__name__)
        await self._from_app.put({"type": "lifespan.ended"})

    async def _send(self, message: Any) -> None:
        await self._from_app.put(dict(message))

    async def _startup(self, timeout_s: float) -> None:
        self._task = asyncio.create_task(self._run_lifespan())
        await self._to_app.put({"type": "lifespan.startup"})
        try:
            async with asyncio.timeout(timeout_s):
                message = await self._from_app.get()
        except TimeoutError:
            raise AsgiLoadError(f"ASGI lifespan startup took longer than {timeout_s:g} s") from None
        if message.get("type") == "lifespan.startup.failed":
            raise AsgiLoadError(f"ASGI lifespan startup failed: {message.get('message', '')}")

    async def aclose(self) -> None:
        await self.transport.aclose()
        task, self._task = self._task, None
        if task is None or task.done():
            return
        await self._to_app.put({"type": "lifespan.shutdown"})
        try:
            async with asyncio.timeout(5):
                while (await self._from_app.get()).get("type") not in (
                    "lifespan.shutdown.complete",
                    "lifespan.shutdown.failed",
                    "lifespan.ended",
                ):
                    pass
        except TimeoutError:
            logger.warning("ASGI lifespan shutdown did not finish within 5 s")
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
