"""Fault agents: real apps with scripted misbehaviour, for the executor's tests.

`fault_app(recorder)` is a Starlette app; mount a manifest's endpoint at
``{base}/{behaviour}``. Each behaviour is one thing a hostile or broken agent
does. `raw_server(script)` is a bare TCP server for the faults HTTP servers
cannot produce (closing a connection before any response byte, answering
with something that is not HTTP).
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import json
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

HUGE_BYTES = 50 * 1024 * 1024
CHUNK = 64 * 1024
LYING_VERSION = "9.9.9"


@dataclass
class Recorder:
    """What the fault agents saw, inspected by the tests (thread-safe enough: appends)."""

    requests: list[tuple[str, list[tuple[bytes, bytes]], bytes]] = field(default_factory=list)
    redirect_target_hits: int = 0
    huge_bytes_sent: int = 0
    flaky_calls: int = 0

    def reset(self) -> None:
        self.requests.clear()
        self.redirect_target_hits = self.huge_bytes_sent = self.flaky_calls = 0

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.requests]


@functools.cache
def _bomb() -> bytes:
    """50 MB of JSON in about 50 KB of gzip."""
    return gzip.compress(b'{"output": "' + b"0" * HUGE_BYTES + b'"}', compresslevel=9)


def _answer(payload: Any, status: int = 200) -> Response:
    return Response(json.dumps(payload), status_code=status, media_type="application/json")


async def _until_gone(request: Request, at_most_s: float) -> None:
    """Sleep until the client hangs up (so the server can shut down promptly), or `at_most_s`."""
    for _ in range(int(at_most_s / 0.05)):
        if await request.is_disconnected():
            return
        await asyncio.sleep(0.05)


def fault_app(recorder: Recorder) -> Starlette:
    async def record(request: Request) -> bytes:
        body = await request.body()
        recorder.requests.append((request.url.path, list(request.headers.raw), body))
        return body

    async def ok(request: Request) -> Response:
        body = json.loads(await record(request))
        return _answer(
            {
                "output": {"echo": body["input"]},
                "usage": {"input_tokens": 1000, "output_tokens": 500},
            }
        )

    async def slow(request: Request) -> Response:
        await record(request)
        await _until_gone(request, 30)
        return _answer({"output": "too late"})

    async def hang_after_headers(request: Request) -> Response:
        await record(request)

        async def body() -> AsyncIterator[bytes]:
            yield b'{"output": '
            await _until_gone(request, 30)  # the headers are out, the body never ends

        return StreamingResponse(body(), media_type="application/json")

    async def error_500(request: Request) -> Response:
        await record(request)
        return Response("boom\x1b[31m\r\nsecret stack trace", status_code=500)

    async def not_json(request: Request) -> Response:
        await record(request)
        return Response("<html>certainly not json</html>", media_type="text/html")

    async def no_output(request: Request) -> Response:
        await record(request)
        return _answer({"result": 42})

    async def huge(request: Request) -> Response:
        await record(request)
        chunk = b" " * CHUNK

        async def body() -> AsyncIterator[bytes]:
            yield b'{"output": "'
            while recorder.huge_bytes_sent < HUGE_BYTES:
                # uvicorn drops writes after a disconnect silently; stop counting there,
                # so the counter is what the client let through before it hung up.
                if await request.is_disconnected():
                    return
                recorder.huge_bytes_sent += len(chunk)
                yield chunk
            yield b'"}'

        return StreamingResponse(body(), media_type="application/json")

    async def gzip_bomb(request: Request) -> Response:
        await record(request)
        return Response(
            _bomb(), media_type="application/json", headers={"Content-Encoding": "gzip"}
        )

    async def gzipped(request: Request) -> Response:
        await record(request)
        body = gzip.compress(json.dumps({"output": {"zipped": True}}).encode())
        return Response(body, media_type="application/json", headers={"Content-Encoding": "gzip"})

    async def deep(request: Request) -> Response:
        await record(request)
        depth = int(request.query_params.get("depth", "100"))
        return Response(
            '{"output": ' + "[" * depth + "]" * depth + "}", media_type="application/json"
        )

    async def drop_mid_body(request: Request) -> Response:
        await record(request)

        async def body() -> AsyncIterator[bytes]:
            yield b'{"output": "partial'
            raise RuntimeError("agent died mid-body")  # uvicorn closes the connection

        return StreamingResponse(
            body(), media_type="application/json", headers={"Content-Length": "1000"}
        )

    async def redirect(request: Request) -> Response:
        await record(request)
        return RedirectResponse("/redirect-target", status_code=302)

    async def redirect_target(request: Request) -> Response:
        recorder.redirect_target_hits += 1
        return _answer({"output": "you followed a redirect"})

    async def expensive(request: Request) -> Response:
        await record(request)
        usage = {"input_tokens": 2000, "output_tokens": 1000, "cost_usd": "1.00"}
        return _answer({"output": "pricey", "usage": usage})

    async def bad_usage(request: Request) -> Response:
        await record(request)
        kind = request.query_params.get("kind", "negative")
        usage: Any = {
            "negative": {"input_tokens": -1},
            "float": {"output_tokens": 1.5},
            "bool": {"input_tokens": True},
            "cost_text": {"cost_usd": "lots"},
            "cost_negative": {"cost_usd": "-0.01"},
            "cost_nan": {"cost_usd": "NaN"},
            "not_object": [1, 2],
        }[kind]
        return _answer({"output": "x", "usage": usage})

    async def flaky(request: Request) -> Response:
        await record(request)
        recorder.flaky_calls += 1
        return _answer({"output": {"call": recorder.flaky_calls}})

    async def status(request: Request) -> Response:
        await record(request)
        code = int(request.path_params["code"])
        return Response(None if code in (204, 304) else "status body", status_code=code)

    async def identity(request: Request) -> Response:
        name = request.path_params["name"]
        recorder.requests.append((request.url.path, list(request.headers.raw), b""))
        if name == "liar":
            return JSONResponse(
                {"id": "acme/liar", "version": LYING_VERSION, "capabilities": ["echo"]}
            )
        if name == "bad-identity":
            return JSONResponse({"id": "acme/bad", "version": 3})
        if name == "identity-500":
            return Response("down", status_code=503)
        return JSONResponse({"id": f"acme/{name}", "version": "1.0.0", "capabilities": ["echo"]})

    # Each POST fault is served at its handler's name, dashed: /hang-after-headers.
    posted = (
        ok,
        slow,
        hang_after_headers,
        error_500,
        not_json,
        no_output,
        huge,
        gzip_bomb,
        gzipped,
        deep,
        drop_mid_body,
        redirect,
        expensive,
        bad_usage,
        flaky,
    )
    routes = [
        *(Route("/" + h.__name__.replace("_", "-"), h, methods=["POST"]) for h in posted),
        Route("/redirect-target", redirect_target, methods=["GET", "POST"]),
        Route("/status/{code:int}", status, methods=["POST"]),
        Route("/{name}/.well-known/holon-agent", identity, methods=["GET"]),
    ]
    return Starlette(routes=routes)


# -- a bare TCP server, for faults below HTTP -------------------------------------------

OK_RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 22\r\n"
    b"Connection: close\r\n\r\n"
    b'{"output": {"ok": 1}} '
)


@dataclass
class RawLog:
    """Each accepted connection's request head (as received), in order."""

    heads: list[bytes] = field(default_factory=list)

    def request_ids(self) -> list[str]:
        ids = []
        for head in self.heads:
            for line in head.split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"holon-request-id":
                    ids.append(value.strip().decode())
        return ids


@contextmanager
def raw_server(script: list[str | bytes]) -> Iterator[tuple[str, RawLog]]:
    """Serve connection i with script[i] (the last entry repeats); yields (base URL, log).

    Behaviours: ``drop`` reads the request then closes without a byte;
    ``garbage`` answers bytes that are not HTTP; ``ok`` answers a valid 200;
    ``hang`` never answers; bytes are written as they are.
    """
    log = RawLog()
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    holder: dict[str, Any] = {}

    handlers: set[asyncio.Task[None]] = set()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handlers.add(task)
        try:
            await serve_one(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            handlers.discard(task)

    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = len(log.heads)
        head = await reader.readuntil(b"\r\n\r\n")
        log.heads.append(head)
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        # Read the body too: closing on unread data would send a reset, not our script.
        await reader.readexactly(length)
        behaviour = script[min(index, len(script) - 1)]
        if isinstance(behaviour, bytes):
            writer.write(behaviour)
        elif behaviour == "garbage":
            writer.write(b"SPEAKING SOMETHING ELSE ENTIRELY\x00\x01\r\n\r\n")
        elif behaviour == "ok":
            writer.write(OK_RESPONSE)
        elif behaviour == "hang":
            await reader.read()  # until the client gives up
        await writer.drain()

    async def start() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        holder["server"] = server
        holder["port"] = server.sockets[0].getsockname()[1]
        ready.set()

    def run() -> None:
        asyncio.set_event_loop(loop)
        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, name="raw-fault-server", daemon=True)
    thread.start()
    if not ready.wait(10):
        raise RuntimeError("raw fault server did not start")
    try:
        yield f"http://127.0.0.1:{holder['port']}", log
    finally:

        async def stop() -> None:
            holder["server"].close()
            for task in list(handlers):
                task.cancel()
            await asyncio.gather(*handlers, return_exceptions=True)
            await holder["server"].wait_closed()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
