"""The transports the executor talks through: one pooled HTTP client, and in-process apps.

Both take a request as the executor prepared it (`Target`, the header
list, the body) and hand back a `Response` (status, raw headers, body
chunks); nothing in between builds client-library request or response
objects, which on a small call cost more than everything else on our side.

HTTP goes straight to one `aiohttp.ClientSession`, built here so that
nothing is added behind our back: no cookies (one agent must not influence
what another receives), no automatic Accept/Accept-Encoding/User-Agent
headers, no automatic decompression (the bounded reader inflates with a
cap), no proxies from the environment, and redirects never followed. What
goes on the wire is what the executor wrote: the header names in lower
case, in its order, Host first and Content-Length last (`tests/agents/
test_wire.py` pins the bytes).

With an address guard (`agents._addresses`), the connector's resolver is a
`GuardedResolver`: the addresses the guard judged are the only ones dialled.
aiohttp dials an IP literal without asking its resolver, so the transport
judges a literal host itself, with the same guard, before the request goes
to aiohttp.

`asgi:` endpoints import operator code into the process; the app is imported
once per endpoint, its lifespan started (as uvicorn's `lifespan="auto"`
would), and called with the same HTTP semantics: the scope and the
`receive` messages an app sees are those of `httpx.ASGITransport`, which
this replaced. An in-process app's whole body is collected before it is
read (the response cap is still enforced; it is trusted operator code,
registered only from the CLI). An exception the app raises before it starts
its response is a 500, as behind a server.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import ssl
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol

from yarl import URL

from agents._addresses import Address, AddressGuard, GuardedResolver, literal_address
from agents._aiohttp import AbstractResolver, aiohttp
from agents._endpoint import EndpointError, parse_endpoint
from agents._httpx import URL as HttpxURL
from agents._httpx import InvalidURL, create_ssl_context
from schema.errors import Refused

__all__ = [
    "ASGI_BASE_URL",
    "AsgiLoadError",
    "Response",
    "Target",
    "Transport",
    "Transports",
    "target",
]

logger = logging.getLogger(__name__)

ASGI_BASE_URL = "http://localhost"
"""The origin an in-process app sees requests come to."""

ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]

_CHUNK_BYTES = 16 * 1024
_ASGI_CLIENT = ("127.0.0.1", 123)  # what httpx.ASGITransport told apps; kept so nothing changes


class AsgiLoadError(Exception):
    """An `asgi:` endpoint could not be imported or started; `str()` says why."""


@dataclass(frozen=True, slots=True)
class Target:
    """A request URL, parsed once: what the wire and an ASGI scope are made of."""

    url: URL
    scheme: str
    host: str
    port: int | None  # None: the scheme's default
    netloc: str  # the Host header
    path: str
    raw_path: bytes
    query: bytes


_TARGETS: dict[str, Target] = {}
_TARGET_CACHE_SIZE = 1024


def target(text: str) -> Target:
    """The parsed `text`, cached (parsing is a sizeable part of a small call's cost).

    The endpoint rule (`agents._endpoint`) reads it first: a URL that breaks
    it (a manifest stored before the rule, an A2A card's interface URL) is
    refused before any parser that disagrees with the resolver sees it, never
    an exception from deeper down. httpx's URL parser then normalises it, as
    it always has, so the request line and the Host header are what they were
    when httpx carried the request.
    """
    parsed = _TARGETS.get(text)
    if parsed is None:
        try:
            parse_endpoint(text)
            url = HttpxURL(text)
        except (EndpointError, InvalidURL) as exc:
            raise Refused(
                f"agent URL refused: {exc}",
                hint="re-register the agent with a canonical endpoint (docs/agents.md)",
                details={"url": text[:300]},
            ) from None
        if len(_TARGETS) >= _TARGET_CACHE_SIZE:
            _TARGETS.clear()
        parsed = _TARGETS[text] = Target(
            url=URL(str(url)),
            scheme=url.scheme,
            host=url.host,
            port=url.port,
            netloc=url.netloc.decode("ascii"),
            path=url.path,
            raw_path=url.raw_path.split(b"?")[0],
            query=url.query,
        )
    return parsed


class Response(Protocol):
    """An answer whose status and headers are in; its body is read from `chunks()`."""

    status: int

    def header(self, name: bytes) -> str | None:
        """The first value of header `name` (lower case), or None."""

    def chunks(self) -> AsyncIterable[bytes]:
        """The body as it arrives (each chunk once; nothing kept)."""

    async def aclose(self) -> None:
        """Release the connection (closed when the body was not read to its end)."""


class Transport(Protocol):
    async def send(
        self,
        method: str,
        to: Target,
        headers: dict[str, str],
        body: bytes,
        *,
        connect_timeout_s: float,
    ) -> Response:
        """Send one request; raises whatever the transport raised when no answer came.

        `headers` are the names in lower case, in wire order, Host first.
        """


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
        self._http: _Http | None = None
        self._asgi: dict[str, _AsgiApp] = {}
        self._asgi_lock: asyncio.Lock | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise RuntimeError("an Executor belongs to the event loop it first ran in")

    def http(self) -> Transport:
        """The shared HTTP transport (created on first use, inside the running loop)."""
        self._bind_loop()
        if self._http is None:
            # Idle connections are dropped before common server keep-alive
            # timeouts (uvicorn: 5 s), so a reused one is rarely closed under us.
            # The DNS cache keeps what the guarded resolver returned: judged addresses.
            # TLS is set per request (`_Http.send`), built on the first https one.
            connector = aiohttp.TCPConnector(
                limit=self._max_connections,
                ttl_dns_cache=10,
                keepalive_timeout=4,
                resolver=self._resolver,
            )
            session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                skip_auto_headers=("Accept", "Accept-Encoding", "User-Agent"),
                auto_decompress=False,
                trust_env=False,
            )
            self._http = _Http(session, self._guard, self._verify)
        return self._http

    async def lookup(self, host: str, port: int) -> list[Address]:
        """Every address `host` resolves to, through the connector's own resolver, unjudged
        (an IP literal is itself). Raises OSError when the name does not resolve."""
        self._bind_loop()
        address = literal_address(host)
        if address is not None:
            return [address]
        return [address for _, address in await self._resolver.lookup(host, port)]

    async def asgi(self, endpoint: str, *, startup_timeout_s: float) -> Transport:
        """The transport to an `asgi:package.module:attribute` endpoint, importing it once.

        Raises AsgiLoadError (never caches a failure, so a fixed module loads next time).
        """
        self._bind_loop()
        cached = self._asgi.get(endpoint)
        if cached is not None:
            return cached
        if self._asgi_lock is None:
            self._asgi_lock = asyncio.Lock()
        async with self._asgi_lock:
            cached = self._asgi.get(endpoint)
            if cached is None:
                cached = await _AsgiApp.load(endpoint, startup_timeout_s)
                self._asgi[endpoint] = cached
        return cached

    async def aclose(self) -> None:
        apps, self._asgi = list(self._asgi.values()), {}
        for app in apps:
            await app.aclose()
        if self._http is not None:
            http, self._http = self._http, None
            await http.aclose()
        await self._resolver.close()


# -- HTTP -------------------------------------------------------------------------------


class _HttpResponse:
    __slots__ = ("_response", "status")

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status = response.status

    def header(self, name: bytes) -> str | None:
        for key, value in self._response.raw_headers:
            if key.lower() == name:
                return value.decode("latin-1")
        return None

    def chunks(self) -> AsyncIterator[bytes]:
        return self._response.content.iter_chunked(_CHUNK_BYTES)

    async def aclose(self) -> None:
        # A body not read to its end leaves the connection unusable: release()
        # closes it then, and returns it to the pool otherwise.
        self._response.release()
        await self._response.wait_for_close()


class _Http:
    """The pooled aiohttp session; a request to an IP literal is judged by the guard first
    (names are judged by the connector's resolver)."""

    def __init__(
        self, session: aiohttp.ClientSession, guard: AddressGuard | None, verify: bool
    ) -> None:
        self._session = session
        self._guard = guard
        self._verify = verify
        self._tls: ssl.SSLContext | None = None
        self._timeouts: dict[float, aiohttp.ClientTimeout] = {}

    def _tls_context(self) -> ssl.SSLContext:
        # Built on the first https request: loading the CA bundle costs a plain-http run
        # (a local agent, `holon test`) tens of milliseconds of CPU for nothing.
        if self._tls is None:
            self._tls = create_ssl_context(verify=self._verify)
        return self._tls

    def _timeout(self, connect_s: float) -> aiohttp.ClientTimeout:
        # `connect` bounds a wait for a pooled slot plus DNS and connect; there is
        # no per-read timeout: the caller's one deadline covers the whole exchange.
        timeout = self._timeouts.get(connect_s)
        if timeout is None:
            if len(self._timeouts) > 64:
                self._timeouts.clear()
            timeout = aiohttp.ClientTimeout(
                total=None, connect=connect_s, sock_connect=connect_s, sock_read=None
            )
            self._timeouts[connect_s] = timeout
        return timeout

    async def send(
        self,
        method: str,
        to: Target,
        headers: dict[str, str],
        body: bytes,
        *,
        connect_timeout_s: float,
    ) -> Response:
        if self._guard is not None:
            address = literal_address(to.host)
            if address is not None:
                port = to.port or (443 if to.scheme == "https" else 80)
                self._guard(to.host, port, [address])
        response = await self._session.request(
            method,
            to.url,
            headers=headers,
            data=body or None,
            allow_redirects=False,
            auto_decompress=False,
            compress=False,
            timeout=self._timeout(connect_timeout_s),
            ssl=self._tls_context() if to.scheme == "https" else True,
        )
        return _HttpResponse(response)

    async def aclose(self) -> None:
        await self._session.close()


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


class _AsgiResponse:
    __slots__ = ("_body", "headers", "status")

    def __init__(self, status: int, headers: Any, body: bytes) -> None:
        self.status = status
        self.headers = headers
        self._body = body

    def header(self, name: bytes) -> str | None:
        for key, value in self.headers:
            if _as_bytes(key).lower() == name:
                return _as_bytes(value).decode("latin-1")
        return None

    async def chunks(self) -> AsyncIterator[bytes]:
        yield self._body

    @property
    def body(self) -> bytes:
        """The whole body (an in-process app's is collected before it is read)."""
        return self._body

    async def aclose(self) -> None:
        pass


def _as_bytes(value: Any) -> bytes:
    # An app's header names and values are bytes by the spec; text was accepted too.
    return value.encode("latin-1") if isinstance(value, str) else bytes(value)


class _AsgiExchange:
    """One request to an app: the `receive` and `send` it is called with.

    The messages are those httpx.ASGITransport produced: the body in one
    `http.request` with `more_body` true, then an empty one with it false,
    then (once the response is complete) `http.disconnect`.
    """

    __slots__ = ("_body", "_done", "_parts", "_received", "complete", "headers", "method", "status")

    def __init__(self, method: str, body: bytes) -> None:
        self.method = method
        self._body = body
        self._received = 0
        self.status: int | None = None
        self.headers: Any = None
        self._parts: list[bytes] = []
        self._done: asyncio.Event | None = None
        self.complete = False

    async def receive(self) -> dict[str, Any]:
        if self._received == 0:
            self._received = 1
            return {"type": "http.request", "body": self._body, "more_body": True}
        if self._received == 1:
            self._received = 2
            return {"type": "http.request", "body": b"", "more_body": False}
        if not self.complete:
            if self._done is None:
                self._done = asyncio.Event()
            await self._done.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.status is not None:
                raise RuntimeError("http.response.start sent twice")
            self.status = message["status"]
            self.headers = message.get("headers", [])
        elif kind == "http.response.body":
            if self.complete:
                raise RuntimeError("http.response.body sent after the last one")
            body = message.get("body", b"")
            if body and self.method != "HEAD":
                self._parts.append(body)
            if not message.get("more_body", False):
                self.complete = True
                if self._done is not None:
                    self._done.set()

    def body(self) -> bytes:
        parts = self._parts
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def finish_failed(self) -> None:
        """The app raised: what a server would answer (500 when nothing was started)."""
        self.complete = True
        if self._done is not None:
            self._done.set()
        if self.status is None:
            self.status = 500
        if self.headers is None:
            self.headers = []


class _AsgiApp:
    """One imported app, called in-process; its lifespan task when the app has one."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app
        self._state: dict[str, Any] = {}
        self._to_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._from_app: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None

    async def send(
        self,
        method: str,
        to: Target,
        headers: dict[str, str],
        body: bytes,
        *,
        connect_timeout_s: float,
    ) -> Response:
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
            "scheme": to.scheme,
            "path": to.path,
            "raw_path": to.raw_path,
            "query_string": to.query,
            "server": (to.host, to.port),
            "client": _ASGI_CLIENT,
            "root_path": "",
            # What the lifespan put in its state is visible to requests, as under uvicorn.
            "state": dict(self._state),
        }
        exchange = _AsgiExchange(method, body)
        try:
            await self._app(scope, exchange.receive, exchange.send)
        except Exception:  # the app's own failure: a 500, as behind a server
            exchange.finish_failed()
        if not exchange.complete or exchange.status is None or exchange.headers is None:
            raise RuntimeError("the app returned without completing its response")
        return _AsgiResponse(exchange.status, exchange.headers, exchange.body())

    @classmethod
    async def load(cls, endpoint: str, startup_timeout_s: float) -> _AsgiApp:
        loaded = cls(_import_app(endpoint))
        try:
            await loaded._startup(startup_timeout_s)
        except BaseException:
            await loaded.aclose()
            raise
        return loaded

    async def _run_lifespan(self) -> None:
        scope = {"type": "lifespan", "asgi": {"version": "3.0", "spec_version": "2.0"}}
        try:
            await self._app({**scope, "state": self._state}, self._to_app.get, self._lifespan_send)
        except Exception as exc:
            # An app without lifespan support raises here; like uvicorn's "auto", carry on.
            logger.debug("ASGI app has no usable lifespan: %s", type(exc).__name__)
        await self._from_app.put({"type": "lifespan.ended"})

    async def _lifespan_send(self, message: Any) -> None:
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
