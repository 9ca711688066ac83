"""A holon-http agent for the number-amplification tests, importable by uvicorn.

What it answers depends on `input.mode`:

- `echo`: the input back as the output, exactly (holon's own JSON codec);
- `huge`: `{"output":{"sum":1e10000000}}`, 40 bytes that used to reach a
  caller as 10 MB;
- `wide`: `count` numbers written `1e20`, each 21 digits when written out;
- `count`: how many items `input.numbers` holds (a small answer to a big request).

It records the size of every request body it received (`received`), and
`GET /received` reports them, for a test whose agent runs in another process.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from schema.jsontext import dumps, loads

received: list[int] = []


def _json(value: Any) -> Response:
    return Response(dumps(value), media_type="application/json")


async def call(request: Request) -> Response:
    body = await request.body()
    received.append(len(body))
    request_input = loads(body, bounded=False)["input"]
    mode = request_input.get("mode", "echo") if isinstance(request_input, dict) else "echo"
    if mode == "huge":
        return Response(b'{"output":{"sum":1e10000000}}', media_type="application/json")
    if mode == "wide":
        numbers = b",".join([b"1e20"] * int(request_input["count"]))
        return Response(b'{"output":[' + numbers + b"]}", media_type="application/json")
    if mode == "count":
        return _json({"output": {"count": len(request_input["numbers"])}})
    return _json({"output": request_input})


async def identity(request: Request) -> Response:
    return _json({"id": "acme/numbers", "version": "1.0.0", "capabilities": ["ticket.classify"]})


async def sizes(request: Request) -> Response:
    return _json(received)


app = Starlette(
    routes=[
        Route("/agent", call, methods=["POST"]),
        Route("/agent/.well-known/holon-agent", identity, methods=["GET"]),
        Route("/received", sizes, methods=["GET"]),
    ]
)
