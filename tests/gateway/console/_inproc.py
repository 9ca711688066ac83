"""The console in-process: the gateway's ASGI app over a real store through httpx's
ASGITransport, its lifespan running in a thread's event loop (an anyio blocking portal,
as Starlette's TestClient does; no eval workers), a session per role made in the store.

Fast enough to render thousands of pages in a property test; the real-HTTP world
(_world.py) covers sockets, cookies and browsers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from anyio.from_thread import BlockingPortal, start_blocking_portal

from gateway.console._web import COOKIE, LIFETIME, csrf_token
from gateway.server import create_app
from records import Store
from tests.gateway.server._gateway import gateway_settings

HERE = "http://testserver"


@dataclass
class Console:
    store: Store
    client: httpx.AsyncClient
    portal: BlockingPortal
    cookies: dict[str, str] = field(default_factory=dict)

    def cookie(self, role: str) -> str:
        """A session of a token of `role` (one per role, made once)."""
        if role not in self.cookies:
            info, _ = self.store.tokens.create(role)
            self.cookies[role] = self.store.sessions.create(info.id, LIFETIME)
        return self.cookies[role]

    def get(self, path: str, role: str | None) -> httpx.Response:
        """GET a console page as `role` (None: signed out); redirects are not followed."""
        return self.request("GET", path, headers=self.headers(role))

    def post(
        self, path: str, role: str, data: dict[str, str], *, csrf: bool = True
    ) -> httpx.Response:
        """POST a console form as `role`, with its session's CSRF token (unless not)."""
        headers = self.headers(role)
        fields = {"csrf": csrf_token(self.cookie(role)), **data} if csrf else data
        return self.request("POST", path, headers=headers, data=fields)

    def headers(self, role: str | None) -> dict[str, str]:
        """The session cookie of `role` (None: none), the one cookie a request sends."""
        self.client.cookies.clear()
        return {} if role is None else {"cookie": f"{COOKIE}={self.cookie(role)}"}

    def request(self, method: str, path: str, **kw: object) -> httpx.Response:
        async def send() -> httpx.Response:
            return await self.client.request(method, path, **kw)  # type: ignore[arg-type]

        return self.portal.call(send)


@contextmanager
def console(store: Store, home: Path) -> Iterator[Console]:
    settings = gateway_settings(home)
    app = create_app(settings, store=store, eval_workers=0, cache_ttl_s=0.0)
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(app.router.lifespan_context(app)):
            transport = httpx.ASGITransport(app=app)
            client = httpx.AsyncClient(transport=transport, base_url=HERE)
            try:
                yield Console(store, client, portal)
            finally:
                portal.call(client.aclose)
