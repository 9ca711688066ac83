"""A zero-latency OpenAI-compatible upstream: a bare ASGI callable (no framework cost)
answering `GET …/models` with its one model and every other request with one fixed chat
completion, whose content is the JSON that bench/gateway/contract.py's suite accepts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench._asgi import chat_completion, json_headers, lifespan, read_body

MODEL = "bench-model"
CONTENT = {"label": "ok", "score": 0.5}
COMPLETION = chat_completion(MODEL, json.dumps(CONTENT))
MODELS = json.dumps(
    {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "bench"}]}
).encode()


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    await read_body(receive)
    body = MODELS if scope["path"].endswith("/models") else COMPLETION
    await send({"type": "http.response.start", "status": 200, "headers": json_headers(body)})
    await send({"type": "http.response.body", "body": body})
