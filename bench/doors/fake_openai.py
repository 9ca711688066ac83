"""A zero-latency OpenAI-compatible upstream: a bare ASGI callable (no framework cost)
answering `GET …/models` with its one model and every other request with one fixed chat
completion, whose content is the JSON that bench/gateway/contract.py's suite accepts."""

from __future__ import annotations

import json
from typing import Any

MODEL = "bench-model"
CONTENT = {"label": "ok", "score": 0.5}
COMPLETION = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1764547200,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": json.dumps(CONTENT)},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128},
    }
).encode()
MODELS = json.dumps(
    {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "bench"}]}
).encode()


def _headers(body: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]


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
    body = MODELS if scope["path"].endswith("/models") else COMPLETION
    await send({"type": "http.response.start", "status": 200, "headers": _headers(body)})
    await send({"type": "http.response.body", "body": body})
