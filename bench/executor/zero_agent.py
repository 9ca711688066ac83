"""A zero-latency holon-http agent: a bare ASGI callable, no framework cost on the server.

`fixed_answer` builds such a callable for any body; the OpenAI-compatible bench
agent (protocol_agents.py) is one too.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench._asgi import json_headers, lifespan, read_body

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
BODY = b'{"output":{"label":"ok","score":0.5},"usage":{"input_tokens":120,"output_tokens":8}}'


def fixed_answer(body: bytes) -> ASGIApp:
    """An ASGI app answering every request 200 with `body` (JSON), lifespan included."""
    headers = json_headers(body)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        await read_body(receive)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


app = fixed_answer(BODY)
