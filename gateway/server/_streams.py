"""A live call answered as a stream of server-sent events, by any front door.

What a caller may rely on (docs/gateway.md, Streaming): a stream is
answered `200` only once the call is allowed and reserved, just before its
agent is called (`LiveCalls.invoke`'s `started`); every refusal before that
(a token, a mandate, a budget, a rate limit, an input outside the contract)
is the door's ordinary error status, so an SDK raises it as it would
without streaming. After that the call's whole answer is awaited, checked
against the contract exactly as a non-streamed answer is, and only then
written out: nothing of an answer is sent before the contract has passed
it, and an answer that fails ends in the door's error event, never as a
success.

While the agent works the stream sends an SSE comment every `KEEPALIVE_S`,
so a caller (and any proxy between) sees it alive.

The call runs in a task of its own, not in the response: a caller that
goes away mid-stream stops only its stream. The call goes on, is settled
and counted as any other (one ledger row), and the server's shutdown waits
for it (`Shared.background`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from gateway.live import Started
from gateway.web import Shared, observed
from schema.errors import HolonError

__all__ = ["KEEPALIVE", "KEEPALIVE_S", "STREAM_HEADERS", "CallStream", "start_stream"]

log = logging.getLogger(__name__)

R = TypeVar("R")

KEEPALIVE_S = 5.0  # well under the idle timeouts of proxies and clients (60 s and more)
KEEPALIVE = b": keep-alive\n\n"  # an SSE comment: every SSE reader skips it
# No cache, and no buffering by a proxy (nginx's header), so each event goes at once.
STREAM_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


@dataclass
class CallStream(Generic[R]):
    """A call gone to its agent: which one (the first tried, when routed) and its task."""

    agent: str
    request_id: str
    task: asyncio.Task[R]

    async def waiting(self) -> AsyncIterator[bytes]:
        """A keep-alive comment every KEEPALIVE_S until the call is done. Cancelling the
        wait (the caller went away) leaves the call running."""
        while not self.task.done():
            await asyncio.wait({self.task}, timeout=KEEPALIVE_S)
            if not self.task.done():
                yield KEEPALIVE


Encoder = Callable[[dict[str, Any], int], Awaitable[R]]


async def start_stream(
    shared: Shared,
    capability: str,
    call: Callable[[Started], Awaitable[dict[str, Any]]],
    encoder: Callable[[str, str], Encoder[R]],
) -> CallStream[R]:
    """Start `call` (given the `started` hook) in a task of its own and wait until its agent
    is called. A call refused or failed before that raises here, as it would unstreamed.

    `encoder(agent, request_id)` of the first agent called makes what the stream sends
    of an answer (a door's own events, named after that first call, which a routed call
    that falls back keeps); its work is counted by the door metrics as any answer's
    (`observed`)."""
    loop = asyncio.get_running_loop()
    began: asyncio.Future[tuple[str, str]] = loop.create_future()
    encoders: list[Encoder[R]] = []

    def started(agent: str, request_id: str) -> None:
        if not began.done():  # routing tells each agent it tries: the first one is named
            encoders.append(encoder(agent, request_id))
            began.set_result((agent, request_id))

    async def encode(body: dict[str, Any], limit: int) -> R:
        return await encoders[0](body, limit)  # an answer came from an agent: started

    task = loop.create_task(observed(shared, capability, call(started), encode))
    shared.background.add(task)
    task.add_done_callback(_forget(shared))
    either: set[asyncio.Future[Any]] = {began, task}
    await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
    if not began.done():
        task.result()  # raises the refusal (a task done without its agent: never an answer)
        raise AssertionError("a live call answered without calling an agent")
    agent, request_id = began.result()
    return CallStream(agent, request_id, task)


def _forget(shared: Shared) -> Callable[[asyncio.Task[Any]], None]:
    def done(task: asyncio.Task[Any]) -> None:
        shared.background.discard(task)
        # A caller that went away no longer reads the outcome: take it here, so a refused or
        # failed call (its ledger row says how) is not logged as never retrieved; a bug is.
        error = None if task.cancelled() else task.exception()
        if error is not None and not isinstance(error, HolonError):
            log.error("a streamed live call failed", exc_info=error)

    return done
