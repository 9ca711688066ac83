"""Bench agents for bench/eval: bare ASGI callables, no framework cost on the agent's side.

- `app`: answers at once (zero latency);
- `slow_app`: answers after 20 ms (`asyncio.sleep`), so a runner at
  concurrency C can do at best C / 0.020 cells a second.

Both answer every ticket with the same classification and usage, and speak
just enough of holon-http for the executor and the identity probe.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench._asgi import json_headers, lifespan, read_body

AGENT_ID = "bench/agent"
VERSION = "1.0.0"
LATENCY_S = 0.020

OUTPUT = {"label": "billing", "priority": "normal", "product": "books", "confidence": 0.9}
BODY = json.dumps({"output": OUTPUT, "usage": {"input_tokens": 120, "output_tokens": 16}}).encode()
IDENTITY = json.dumps({"id": AGENT_ID, "version": VERSION, "capabilities": ["ticket.classify"]})


async def _answer(scope: dict[str, Any], receive: Any, send: Any, delay_s: float) -> None:
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    body = BODY
    if scope["method"] == "GET":
        body = IDENTITY.encode()
    await read_body(receive)
    if delay_s:
        await asyncio.sleep(delay_s)
    await send({"type": "http.response.start", "status": 200, "headers": json_headers(body)})
    await send({"type": "http.response.body", "body": body})


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await _answer(scope, receive, send, 0.0)


async def slow_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    await _answer(scope, receive, send, LATENCY_S)
