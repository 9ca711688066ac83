"""What the benches' bare ASGI agents share: the lifespan, the JSON headers, the request
body, and the fixed chat completion of an OpenAI-compatible one.

The agents run under uvicorn with `--app-dir` their own folder, so each puts the
repository root on `sys.path` and imports this as `bench._asgi`. It imports
nothing heavy: an agent's start-up is not what a bench measures.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["chat_completion", "json_headers", "lifespan", "read_body"]


def chat_completion(model: str, content: str) -> bytes:
    """One finished chat completion answering `content`, with a fixed usage."""
    return json.dumps(
        {
            "id": "chatcmpl-bench",
            "object": "chat.completion",
            "created": 1764547200,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 120, "completion_tokens": 8, "total_tokens": 128},
        }
    ).encode()


def json_headers(body: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]


async def lifespan(receive: Any, send: Any) -> None:
    """Answer the lifespan's startup and shutdown, so uvicorn starts and stops cleanly."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def read_body(receive: Any) -> bytes:
    """The request's body, every chunk of it (an agent that ignores it still reads it all)."""
    chunks = []
    more = True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    return b"".join(chunks)
