"""The W3C `traceparent` every call to an agent carries, live and eval alike.

Every request to an agent (`holon-http`, `asgi`, `a2a`, a live call or an
eval cell) has exactly one ``traceparent: 00-<trace id>-<parent id>-<flags>``
header, so its presence and shape say nothing about what kind of call it is.
Its value comes from the OpenTelemetry context current when the call starts
(`current_traceparent`), which the caller of the executor sets (agents never
import the gateway):

- a recording span (tracing on: the gateway's `call` span, an eval's
  `eval.cell` span): its trace id, its span id, its sampled flag;
- a span that records nothing but names a valid trace (tracing off, the
  caller sent a traceparent the gateway accepted): that trace id, a fresh
  parent id, flags `00` (nothing is recorded, so nothing is sampled);
- nothing: a fresh trace id and parent id, flags `00`.

Each attempt of a call (a retry of an `unreachable` one) is in the call's
trace under a span id of its own (`attempt_traceparent`, or a span per
attempt when the executor is given a tracer); the request id stays the same.

`tracestate` is never sent: the caller's vendor state is the caller's, and
an eval has none to send, so sending it would tell the two apart.
Identifiers come from the OS's random bytes (`RandomBlocks`: one system
call per 256 ids), so an agent cannot predict the next fresh trace id and
tell a gateway-made one from a caller's by its place in a sequence.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
import weakref
from collections.abc import Iterator
from datetime import UTC, datetime

from opentelemetry import trace
from opentelemetry.trace import Span, Tracer

__all__ = [
    "TRACEPARENT",
    "RandomBlocks",
    "attempt_context",
    "attempt_traceparent",
    "current_traceparent",
    "fresh_traceparent",
    "request_id",
    "span_id_of",
    "utc_now",
]

TRACEPARENT = "traceparent"


class RandomBlocks:
    """Blocks of `size` random bytes from a buffer of OS randomness, `batch` at a time.

    Reading the OS's randomness per id is a system call that lets go of the
    GIL, and on a busy gateway getting it back from the ledger or lookup
    threads costs the event loop up to a switch interval (5 ms).
    """

    def __init__(self, size: int, batch: int = 256) -> None:
        self._size = size
        self._batch = batch
        self._buffer = b""
        self._offset = 0
        self._lock = threading.Lock()  # several event loops may share a process (tests, CLI)
        _LIVE.add(self)

    def __call__(self) -> bytes:
        with self._lock:
            if self._offset >= len(self._buffer):
                self._buffer, self._offset = os.urandom(self._size * self._batch), 0
            block = self._buffer[self._offset : self._offset + self._size]
            self._offset += self._size
        return block

    def _forget(self) -> None:
        # A forked child (`holon eval --processes N`) would otherwise hand out the
        # very blocks its parent hands out next: the same trace and request ids.
        self._buffer, self._offset = b"", 0
        self._lock = threading.Lock()  # another thread may have held it at the fork


_LIVE: weakref.WeakSet[RandomBlocks] = weakref.WeakSet()


def _after_fork() -> None:
    for blocks in list(_LIVE):
        blocks._forget()


os.register_at_fork(after_in_child=_after_fork)

_random = RandomBlocks(24)  # a trace id (16 bytes) and a parent id (8)
_request_ids = RandomBlocks(16)


def request_id() -> str:
    """A new request id: a random UUID (version 4), from the buffered OS randomness."""
    return str(uuid.UUID(bytes=_request_ids(), version=4))


def _nonzero(value: bytes) -> bytes:
    # All zeros is the invalid id of the spec (a chance of 2**-64 at worst).
    return value if any(value) else b"\x00" * (len(value) - 1) + b"\x01"


def fresh_traceparent() -> str:
    """A new trace: fresh trace id and parent id, not sampled."""
    block = _random()
    return f"00-{_nonzero(block[:16]).hex()}-{_nonzero(block[16:]).hex()}-00"


def current_traceparent() -> str:
    """The traceparent of a call starting now, from the current OpenTelemetry context."""
    span = trace.get_current_span()
    context = span.get_span_context()
    if not context.is_valid:
        return fresh_traceparent()
    if span.is_recording():
        flags = int(context.trace_flags) & 0x01
        return f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags:02x}"
    return f"00-{context.trace_id:032x}-{_nonzero(_random()[16:]).hex()}-00"


def attempt_traceparent(call: str, number: int) -> str:
    """The traceparent attempt `number` (from 1) of a call sends, from the call's own.

    Every attempt is in the call's trace; a retry gets a parent id of its own, so
    the agent (and the cell's attempts) tell the tries apart while the request id
    stays the same. When the caller's recording span is the parent, its id is kept:
    a parent id no span has would break the caller's trace (give the executor a
    tracer for a span per attempt).
    """
    if number == 1 or trace.get_current_span().is_recording():
        return call
    return f"{call[:36]}{_nonzero(_random()[16:]).hex()}{call[52:]}"


def span_id_of(traceparent: str) -> str:
    """The parent id of a traceparent (the span of the caller's that sent it)."""
    return traceparent[36:52]


@contextlib.contextmanager
def attempt_context(
    tracer: Tracer | None, call: str, number: int, request_id: str
) -> Iterator[tuple[str, Span | None]]:
    """(the traceparent attempt `number` sends, its span) while the attempt runs.

    With a tracer, the attempt is a span `agent.attempt` (a child of the current
    one) and its ids are sent; without, `attempt_traceparent` of the call's.
    """
    if tracer is None:
        yield attempt_traceparent(call, number), None
        return
    with tracer.start_as_current_span(
        "agent.attempt", attributes={"holon.attempt": number, "holon.request_id": request_id}
    ) as span:
        yield current_traceparent(), span


def utc_now() -> str:
    """Now, as an attempt records when it started: ISO 8601 UTC, in milliseconds."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
