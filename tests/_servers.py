"""Run real ASGI apps on 127.0.0.1 for end-to-end tests (uvicorn in a thread)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from bench._support import free_port as free_port  # the tests import it from here

ROOT = Path(__file__).resolve().parents[1]


@contextmanager
def serve(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    startup_timeout: float = 10.0,
    **options: Any,
) -> Iterator[str]:
    """Serve `app` on `port` (0: a free one); yields its base URL (no trailing slash).

    `options` go to uvicorn.Config (e.g. gateway.server.SERVER_OPTIONS)."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level="warning",
        lifespan="auto",
        **{"access_log": False, **options},
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name=f"uvicorn-{id(app):x}", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("test server did not start")
        time.sleep(0.005)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def start_gateway(
    env: dict[str, str], *options: str, stdout: int = subprocess.DEVNULL
) -> tuple[subprocess.Popen[str], str]:
    """`holon gateway serve` from this checkout in a process of its own, on a free port,
    with no eval workers and `options`: the process (its stderr a pipe) and its URL. The
    caller waits for it (wait_healthy) and stops it, in a `finally`."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "gateway", "serve", "--port", str(port)]
        + ["--eval-workers", "0", *options],
        cwd=ROOT,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
    )
    return server, f"http://127.0.0.1:{port}"


def wait_healthy(server: subprocess.Popen[str], url: str, timeout_s: float = 90) -> None:
    """Wait until a `holon gateway serve` process at `url` answers /healthz with 200.

    The wait is generous (start-up on loaded cores), not a timing check; a server
    that exits first fails the test with what it printed on stderr."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert server.poll() is None, server.communicate()[1]
        assert time.monotonic() < deadline, "the gateway did not start"
        time.sleep(0.05)


@dataclass
class Tap:
    """An ASGI wrapper recording each HTTP request's method, path, headers (a dict, and
    as sent, in order) and body (as bytes, and parsed as JSON)."""

    app: Any
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        self.seen.append(
            {
                "method": scope["method"],
                "path": scope["path"],
                "headers": {k.decode().lower(): v.decode() for k, v in scope["headers"]},
                "raw_headers": list(scope["headers"]),
                "body": body,
                "json": json.loads(body) if body else None,
            }
        )
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
