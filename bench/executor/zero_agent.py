"""A zero-latency holon-http agent: a bare ASGI callable, no framework cost on the server.

`fixed_answer` builds such a callable for any body; the OpenAI-compatible bench
agent (protocol_agents.py) is one too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]
BODY = b'{"output":{"label":"ok","score":0.5},"usage":{"input_tokens":120,"output_tokens":8}}'


def fixed_answer(body: bytes) -> ASGIApp:
    """An ASGI app answering every request 200 with `body` (JSON), lifespan included."""
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        more = True
        while more:
            more = (await receive()).get("more_body", False)
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    return app


app = fixed_answer(BODY)
