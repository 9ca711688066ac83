"""An in-process (`asgi:`) math.add agent for the streaming doors' fast tests.

Its answers are set by its input, so a test needs no state of its own: the
right sum with token counts, except `a` 666 (a sum that is not a number: the
contract broken) and `a` 777 (the sum, after `b` tenths of a second).
"""

from __future__ import annotations

import asyncio
import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.gateway.server._adder import CAPABILITY, adder_manifest

AGENT = "acme/streamed-adder"
ENDPOINT = "asgi:tests.gateway.server._stream_agent:app"
BROKEN = 666
SLOW = 777
USAGE = {"input_tokens": 7, "output_tokens": 3}


async def _call(request: Request) -> Response:
    value = json.loads(await request.body())["input"]
    if value["a"] == BROKEN:
        return JSONResponse({"output": {"sum": "not a number"}, "usage": USAGE})
    if value["a"] == SLOW:
        await asyncio.sleep(value["b"] / 10)
    return JSONResponse({"output": {"sum": value["a"] + value["b"]}, "usage": USAGE})


async def _identity(request: Request) -> Response:
    return JSONResponse({"id": AGENT, "version": "1.0.0", "capabilities": [CAPABILITY]})


app = Starlette(
    routes=[
        Route("/", _call, methods=["POST"]),
        Route("/.well-known/holon-agent", _identity, methods=["GET"]),
    ]
)


def stream_agent_manifest() -> dict[str, object]:
    manifest = adder_manifest(AGENT, "")
    manifest.update(endpoint=ENDPOINT, protocol="asgi")
    return manifest
