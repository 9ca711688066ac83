"""A streamed chat completion (`stream: true`): OpenAI's `chat.completion.chunk` events.

The wire is OpenAI's: `text/event-stream`, each event `data: <chunk JSON>`,
the last `data: [DONE]`. Held to the contract as every live call is
(gateway.server._streams): the stream is answered only once the call is
allowed and reserved; its first event is the role chunk
(`delta: {"role": "assistant", "content": ""}`), sent at once; SSE comments
keep it alive while the agent works; then, once the whole answer has passed
the output schema, the output's JSON text in content deltas, a chunk with
`finish_reason: "stop"` (and `holon`, the rest of /invoke's answer), with
`stream_options.include_usage` a last chunk with no choices and the
`usage`, and `[DONE]`. An answer that fails (the contract, a timeout, the
agent's error) ends in one event `data: {"error": {...}}` (OpenAI's error
object, as the non-streamed status's body), which the `openai` SDKs raise
as `APIError` while iterating, and no `[DONE]`: it never ends as `stop`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from anyio import to_thread
from starlette.responses import Response, StreamingResponse

from gateway.live import Started
from gateway.server._openai_errors import error_object
from gateway.server._routes_calls import answer_too_large
from gateway.server._streams import STREAM_HEADERS, CallStream, start_stream
from gateway.web import Shared
from schema.errors import HolonError
from schema.jsontext import LARGE_NODES, count_nodes, dumps

__all__ = ["CHUNK_CHARS", "DONE", "completion_usage", "stream_completion"]

# Characters of the output's JSON text in one content delta: a small answer is one
# delta, a large one is not one event of megabytes (a client buffers an event whole).
CHUNK_CHARS = 16 * 1024
# The bytes a chunk holds besides its content (ids, model, a bounded `holon`).
_CHUNK_ENVELOPE = 1024
DONE = b"data: [DONE]\n\n"


def completion_usage(body: dict[str, Any]) -> dict[str, Any] | None:
    """OpenAI's `usage` of a live call's answer: the agent's reported tokens, when it
    reports both counts; else None."""
    usage = body.get("usage") or {}
    prompt, completion = usage.get("input_tokens"), usage.get("output_tokens")
    if prompt is None or completion is None:
        return None
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


async def stream_completion(
    shared: Shared,
    capability: str,
    call: Callable[[Started], Awaitable[dict[str, Any]]],
    *,
    include_usage: bool,
    answer_factor: int,
) -> Response:
    """The call's answer as a stream; a refusal before its agent is called raises (the
    door answers it with its status). `answer_factor`: the door's bound on an answer,
    as a multiple of the response cap."""
    created = int(time.time())

    def encoder(agent: str, request_id: str) -> Callable[[dict[str, Any], int], Awaitable[bytes]]:
        head = {"id": f"chatcmpl-{request_id}", "created": created}

        async def encode(body: dict[str, Any], limit: int) -> bytes:
            if count_nodes(body.get("output"), LARGE_NODES) > LARGE_NODES:
                events = await to_thread.run_sync(_answer_events, head, body, include_usage)
            else:
                events = _answer_events(head, body, include_usage)
            bound = limit * answer_factor + _CHUNK_ENVELOPE * (events.count(b"\n\n") + 1)
            if len(events) > bound:
                raise answer_too_large(body, len(events), bound)
            return events

        return encode

    stream = await start_stream(shared, capability, call, encoder)
    return StreamingResponse(
        _events(stream, created, include_usage),
        media_type="text/event-stream",
        headers=STREAM_HEADERS,
    )


async def _events(
    stream: CallStream[bytes], created: int, include_usage: bool
) -> AsyncIterator[bytes]:
    role = {"role": "assistant", "content": "", "refusal": None}
    first = _chunk(
        {"id": f"chatcmpl-{stream.request_id}", "created": created},
        stream.agent,
        role,
        None,
        include_usage,
    )
    yield _event(first)
    async for beat in stream.waiting():
        yield beat
    try:
        yield stream.task.result()
    except HolonError as exc:
        yield _event({"error": error_object(exc)})
    except Exception:  # a bug, logged with the task (gateway.server._streams): no success
        yield _event({"error": error_object(HolonError("internal error"))})


def _answer_events(head: dict[str, Any], body: dict[str, Any], include_usage: bool) -> bytes:
    """The events of an answer that kept the contract: content deltas, the stop, maybe the
    usage, [DONE]."""
    text = dumps(body["output"])
    agent = body["agent"]
    events = [
        _event(_chunk(head, agent, {"content": text[at : at + CHUNK_CHARS]}, None, include_usage))
        for at in range(0, len(text), CHUNK_CHARS)
    ]
    stop = _chunk(head, agent, {}, "stop", include_usage)
    stop["holon"] = {key: value for key, value in body.items() if key != "output"}
    events.append(_event(stop))
    if include_usage:
        usage = {**_chunk(head, agent, {}, None, False), "choices": []}
        usage["usage"] = completion_usage(body)
        events.append(_event(usage))
    events.append(DONE)
    return b"".join(events)


def _chunk(
    head: dict[str, Any],
    model: str,
    delta: dict[str, Any],
    finish: str | None,
    include_usage: bool,
) -> dict[str, Any]:
    chunk: dict[str, Any] = {
        "id": head["id"],
        "object": "chat.completion.chunk",
        "created": head["created"],
        "model": model,
        "system_fingerprint": None,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    if include_usage:  # as OpenAI: every chunk says usage null, but the last one
        chunk["usage"] = None
    return chunk


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + dumps(data).encode() + b"\n\n"
