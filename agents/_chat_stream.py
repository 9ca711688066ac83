"""A streamed chat completion read from an `openai-chat` agent (`openai_chat.stream: true`).

The agent answers server-sent events of `chat.completion.chunk` and
`data: [DONE]`; holon asks with `stream_options.include_usage`, so the last
chunk reports the tokens. The events are read with the executor's bounds:

- bytes: the whole stream within `max_response_bytes`, as a body is
  (nothing past the cap is buffered); more is `invalid_response`;
- time: the first byte of the body within `CallLimits.stream_first_byte_s`,
  each later read within `stream_gap_s` (a drip of keep-alives resets it:
  each is a byte of the stream, and the deadline still bounds the whole),
  both `timeout`; the attempt's deadline bounds it all (the caller's
  `asyncio.timeout`);
- money: a chunk reporting usage whose price is over the call's cap ends the
  read at once (`CostCut`: the call is `cost_exceeded`, charged that usage),
  so a model that runs on is not paid past the cap;
- shape: an event that is not JSON (holon's bounded reader), a stream
  without `[DONE]`, a compressed stream: `invalid_response`.

The chunks are assembled into the completion a non-streamed call would have
had (`model`, `choices[0].message` with its content and refusal,
`finish_reason`, `usage`), which `agents._openai.read_chat` then reads as it
reads any: the output is parsed and graded whole, never piece by piece.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from decimal import Decimal
from typing import Any

from agents._cost import exceeds_cap, price
from agents._exchange import BodyReader, CallFailure
from agents._limits import CallLimits
from agents._manifest import Manifest
from agents._outcome import Usage
from agents._reader import BodyError, parse_json
from agents._transports import Response
from schema.jsontext import dumps

__all__ = ["CostCut", "chat_stream_reader", "read_chat_stream"]

_EVENT_DEPTH = 8  # a chunk's own nesting; the content is a string, parsed later
_SHOWN = 120


class CostCut(CallFailure):
    """The stream reported usage priced over the call's cap: it was cut there. The executor
    prices `usage` (the call is `cost_exceeded`, charged as such)."""

    def __init__(self, usage: Usage) -> None:
        super().__init__("cost_exceeded", "the stream was cut at the cost cap")
        self.usage = usage


def chat_stream_reader(agent: Manifest, limits: CallLimits) -> BodyReader | None:
    """How the executor reads `agent`'s body: as events when it streams, else None (whole)."""
    spec = agent.openai_chat
    if agent.protocol != "openai-chat" or spec is None or not spec.stream:
        return None
    deadline = limits.deadline_s(agent)
    return functools.partial(
        read_chat_stream,
        agent,
        max_bytes=limits.max_response_bytes,
        first_byte_s=min(limits.stream_first_byte_s, deadline),
        gap_s=min(limits.stream_gap_s, deadline),
        cap=limits.max_cost_usd,
    )


async def read_chat_stream(
    agent: Manifest,
    response: Response,
    *,
    max_bytes: int,
    first_byte_s: float,
    gap_s: float,
    cap: Decimal | None,
) -> bytes:
    """The completion assembled from the stream, as JSON bytes; CallFailure or CostCut."""
    encoding = response.header(b"content-encoding")
    if encoding not in (None, "", "identity"):
        raise CallFailure("invalid_response", f"a stream must not be compressed ({encoding})")
    completion = _Completion(agent, cap)
    size = 0
    buffer = bytearray()  # bytes of events not yet complete; appended to, compacted per read
    async for chunk in _timed(response.chunks(), first_byte_s, gap_s):
        size += len(chunk)
        if size > max_bytes:
            raise CallFailure("invalid_response", f"the stream is over {max_bytes} bytes")
        scan = max(len(buffer) - 3, 0)  # a boundary may straddle the last read
        buffer += chunk
        begin = 0
        while (found := _boundary(buffer, max(begin, scan))) is not None:
            end, width = found
            if completion.take(bytes(buffer[begin:end]).replace(b"\r\n", b"\n")):
                return completion.document()
            begin = end + width
        del buffer[:begin]  # once a read: linear in the stream, however many events
    raise CallFailure("invalid_response", "the stream ended without data: [DONE]")


def _boundary(buffer: bytearray, start: int) -> tuple[int, int] | None:
    """(where, how wide) the first blank line from `start` is, if any."""
    found = [
        (at, len(mark)) for mark in (b"\n\n", b"\r\n\r\n") if (at := buffer.find(mark, start)) >= 0
    ]
    return min(found) if found else None


async def _timed(chunks: Any, first_byte_s: float, gap_s: float) -> AsyncIterator[bytes]:
    iterator = aiter(chunks)
    wait, what = first_byte_s, "first byte"
    while True:
        try:
            async with asyncio.timeout(wait):
                chunk = await anext(iterator)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise CallFailure(
                "timeout", f"the stream's {what} did not come within {wait:g} s"
            ) from None
        if chunk:
            yield chunk
            wait, what = gap_s, "next bytes"


class _Completion:
    """The chunks seen so far, as the one completion they add up to."""

    def __init__(self, agent: Manifest, cap: Decimal | None) -> None:
        self.agent = agent
        self.cap = cap
        self.model: str | None = None
        self.content: list[str] = []
        self.refusal: list[str] = []
        self.finish: str | None = None
        self.usage: dict[str, Any] | None = None

    def take(self, event: bytes) -> bool:
        """Read one event; True at `[DONE]`."""
        data = [
            line[5:].removeprefix(b" ") for line in event.split(b"\n") if line.startswith(b"data:")
        ]
        if not data:  # a comment (keep-alive) or a field holon does not read
            return False
        text = b"\n".join(data)
        if text.strip() == b"[DONE]":
            return True
        try:
            chunk = parse_json(text, _EVENT_DEPTH)
        except BodyError as exc:
            raise CallFailure("invalid_response", f"a stream event: {exc}") from None
        if not isinstance(chunk, dict):
            raise CallFailure("invalid_response", "a stream event is not a JSON object")
        if "error" in chunk:
            raise CallFailure("agent_error", f"the stream ended in an error: {chunk['error']!r}")
        self._model(chunk.get("model"))
        choices = chunk.get("choices")
        if isinstance(choices, list) and choices and isinstance(choices[0], dict):
            self._choice(choices[0])
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
            self._check_cost(usage)
        return False

    def _model(self, model: Any) -> None:
        if not isinstance(model, str):
            return
        if self.model is None:
            self.model = model
        elif model != self.model:
            raise CallFailure(
                "invalid_response",
                f"the stream's model changed from {self.model[:_SHOWN]!r} to {model[:_SHOWN]!r}",
            )

    def _choice(self, choice: dict[str, Any]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            for key, parts in (("content", self.content), ("refusal", self.refusal)):
                piece = delta.get(key)
                if isinstance(piece, str):
                    parts.append(piece)
                elif piece is not None:
                    raise CallFailure("invalid_response", f"a stream's delta.{key} is no string")
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            self.finish = finish

    def _check_cost(self, usage: dict[str, Any]) -> None:
        counts = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
            return  # read_chat judges a malformed usage, at the end
        found = Usage(input_tokens=counts[0], output_tokens=counts[1])
        if exceeds_cap(price(self.agent, found)[0], self.cap):
            raise CostCut(found)

    def document(self) -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.content)}
        if self.refusal:
            message["refusal"] = "".join(self.refusal)
        completion: dict[str, Any] = {
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self.finish}],
        }
        if self.model is not None:
            completion["model"] = self.model
        if self.usage is not None:
            completion["usage"] = self.usage
        return dumps(completion).encode()
