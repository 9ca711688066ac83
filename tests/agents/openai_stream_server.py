"""A loopback OpenAI-compatible server that streams (`stream: true`), honest or hostile.

``{url}/{mode}/v1`` is the endpoint, as in openai_server.py. Modes:

- ``honest``: the label in three content deltas, a stop, a usage chunk
  (`USAGE`), ``[DONE]``;
- ``late``: the same, its first byte after 0.5 s; ``drip``: the same, one
  byte every 0.3 s; ``never-ends``: a keep-alive comment every 50 ms,
  forever; ``flood``: chunks as fast as it can, forever;
- ``malformed``: an event that is not JSON; ``no-done``: the honest events
  without ``[DONE]``; ``error``: an error event; ``broken-last``: the last
  content delta breaks the JSON; ``schema-last``: the last delta makes the
  label a number (JSON, outside the output schema); ``model-switch``: a
  second model midway;
- ``cost-run``: usage in every chunk, growing by 100,000 output tokens a
  chunk, forever (a model that runs on).

Every request's body is kept in `Recorder.requests`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from tests.agents.openai_server import MODEL, USAGE, Recorder

PIECES = ['{"label": ', '"bil', 'ling"}']


def _chunk(delta: dict[str, Any], **extra: Any) -> bytes:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1764547200,
        "model": extra.pop("model", MODEL),
        "choices": [{"index": 0, "delta": delta, "finish_reason": extra.pop("finish", None)}],
        **extra,
    }
    return b"data: " + json.dumps(body).encode() + b"\n\n"


def _honest(pieces: list[str] = PIECES) -> list[bytes]:
    events = [_chunk({"role": "assistant", "content": ""})]
    events += [_chunk({"content": piece}) for piece in pieces]
    events.append(_chunk({}, finish="stop"))
    usage = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": MODEL}
    events.append(b"data: " + json.dumps({**usage, "choices": [], "usage": USAGE}).encode())
    events[-1] += b"\n\n"
    return [*events, b"data: [DONE]\n\n"]


async def _events(mode: str) -> AsyncIterator[bytes]:
    if mode == "late":
        await asyncio.sleep(0.5)
    if mode == "drip":
        for byte in b"".join(_honest()):
            yield bytes([byte])
            await asyncio.sleep(0.3)
        return
    if mode == "never-ends":
        while True:
            yield b": keep-alive\n\n"
            await asyncio.sleep(0.05)
    if mode == "flood":
        while True:
            yield _chunk({"content": " "}) * 100
            await asyncio.sleep(0)
    if mode == "cost-run":
        tokens = 0
        while True:
            tokens += 100_000
            usage = {"prompt_tokens": 10, "completion_tokens": tokens}
            yield _chunk({"content": " "}, usage=usage)
            await asyncio.sleep(0.01)
    if mode == "malformed":
        yield _chunk({"role": "assistant", "content": ""}) + b"data: {not json\n\n"
        return
    if mode == "error":
        yield b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n'
        return
    pieces = {
        "broken-last": ['{"label": ', '"billing"', "}}}"],
        "schema-last": ['{"label": ', "42}"],
    }
    events = _honest(pieces.get(mode, PIECES))
    if mode == "model-switch":
        events[2] = _chunk({"content": PIECES[1]}, model="gpt-4o-mini")
    if mode == "no-done":
        events = events[:-1]
    for event in events:
        yield event


def stream_app(recorder: Recorder) -> Starlette:
    async def completions(request: Request) -> Response:
        raw = await request.body()
        recorder.requests.append({"path": request.url.path, "body": raw})
        return StreamingResponse(
            _events(request.path_params["mode"]), media_type="text/event-stream"
        )

    return Starlette(routes=[Route("/{mode}/v1/chat/completions", completions, methods=["POST"])])
