"""A loopback OpenAI-compatible chat-completions server (Starlette), honest or not.

The behaviour is the first path segment: ``{url}/{mode}/v1`` is the
endpoint (``POST /chat/completions``, ``GET /models``). Modes:

- ``honest``: labels a ticket from the rendered user message ("refund" is
  billing, else account) and reports `USAGE`;
- ``alias``: the same, answered as `ALIAS` (a served name of the model);
- ``wrong-model``: the same, answered by another model;
- ``no-usage``: the same, without `usage`;
- ``not-json``: prose content; ``huge``: 2 MB of JSON content;
- ``refusal``: a refusal and null content; ``length``: JSON cut off by the
  token limit (finish_reason ``length``);
- ``deep``: content nested 200 levels; ``big-number``: content holding
  ``1e999999``; ``bad-usage``: negative token counts; ``no-choices``.

Every request's path, headers and body are kept in `Recorder.requests`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests._servers import serve

MODEL = "qwen2.5-7b-instruct"
ALIAS = "qwen2.5-7b-instruct-q4_k_m"
USAGE = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200}


@dataclass
class Recorder:
    requests: list[dict[str, Any]] = field(default_factory=list)

    def reset(self) -> None:
        self.requests.clear()


def _label(body: dict[str, Any]) -> str:
    user = body["messages"][-1]["content"]
    return "billing" if "refund" in user.lower() else "account"


def openai_app(recorder: Recorder) -> Starlette:
    async def completions(request: Request) -> JSONResponse:
        mode = request.path_params["mode"]
        raw = await request.body()
        body = json.loads(raw)
        recorder.requests.append(
            {"path": request.url.path, "headers": list(request.headers.raw), "body": raw}
        )
        content: str | None = json.dumps({"label": _label(body)})
        message: dict[str, Any] = {"role": "assistant", "content": content}
        finish = "stop"
        model = {"alias": ALIAS, "wrong-model": "gpt-4o-mini"}.get(mode, body["model"])
        if mode == "not-json":
            message["content"] = "Sure! The label is billing."
        elif mode == "huge":
            message["content"] = json.dumps({"label": "x" * 2_000_000})
        elif mode == "refusal":
            message["content"] = None
            message["refusal"] = "I can't help with that."
        elif mode == "length":
            message["content"] = '{"label": "bill'
            finish = "length"
        elif mode == "deep":
            message["content"] = "[" * 200 + "]" * 200
        elif mode == "big-number":
            message["content"] = '{"label": 1e999999}'
        choices: list[Any] = [{"index": 0, "message": message, "finish_reason": finish}]
        if mode == "no-choices":
            choices = []
        answer: dict[str, Any] = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1764547200,
            "model": model,
            "choices": choices,
        }
        if mode == "bad-usage":
            answer["usage"] = {"prompt_tokens": -1, "completion_tokens": 5}
        elif mode != "no-usage":
            answer["usage"] = USAGE
        return JSONResponse(answer)

    async def models(request: Request) -> JSONResponse:
        mode = request.path_params["mode"]
        served = "gpt-4o-mini" if mode == "wrong-model" else MODEL
        recorder.requests.append(
            {"path": request.url.path, "headers": list(request.headers.raw), "body": b""}
        )
        return JSONResponse({"object": "list", "data": [{"id": served, "object": "model"}]})

    return Starlette(
        routes=[
            Route("/{mode}/v1/chat/completions", completions, methods=["POST"]),
            Route("/{mode}/v1/models", models, methods=["GET"]),
        ]
    )


@contextmanager
def serve_recorded(app: Callable[[Recorder], Starlette]) -> Iterator[tuple[str, Recorder]]:
    """`app` (this server's or the streaming one's) on loopback, and what it was sent."""
    recorder = Recorder()
    with serve(app(recorder)) as url:
        yield url, recorder
