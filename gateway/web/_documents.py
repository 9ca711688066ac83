"""A document written in a worker thread a piece at a time, streamed as it is written.

A report of 200,000 cells is hundreds of MB of text: the route never holds it whole. The
writer runs in a worker thread and hands each piece to the response through a small
buffer, so it writes no faster than the client reads. What fails before the first piece
(an unknown eval, a refusal) is answered as any error is, with its status; what fails
after it cuts the stream, so the client sees a body that did not end (a chunked
response without its last chunk), never a complete-looking one.

Bounds: at most `WRITERS` documents are written at once in a process (the next waits for
one to end: a worker thread each, held while its client reads), and a client that takes
no piece for `STALL_S` seconds has its stream cut and its writer freed.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator, Callable

import anyio
from anyio import from_thread, to_thread
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.responses import StreamingResponse

WRITERS = 4
STALL_S = 60.0
BUFFERED = 4  # pieces written ahead of the client
# One limiter per event loop (a process's server has one; tests make many).
_writers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)

Write = Callable[[str], object]


def _limiter() -> anyio.CapacityLimiter:
    loop = asyncio.get_running_loop()
    limiter = _writers.get(loop)
    if limiter is None:
        limiter = _writers[loop] = anyio.CapacityLimiter(WRITERS)
    return limiter


class StalledClient(Exception):
    """The client took no piece for STALL_S seconds: its writer stops."""


async def document_response(
    produce: Callable[[Write], None],
    *,
    status: int,
    media_type: str,
    headers: dict[str, str] | None = None,
) -> StreamingResponse:
    """`produce(write)` run in a worker thread, its pieces streamed in order; raises what
    it raised before its first piece."""
    send, receive = anyio.create_memory_object_stream[str](BUFFERED)

    def work() -> None:
        with send:
            produce(lambda piece: _hand_over(send, piece))

    writer = asyncio.ensure_future(to_thread.run_sync(work, limiter=_limiter()))
    # Its error is read here or below; a response never sent (a client gone before it
    # started) leaves the writer to stop at STALL_S, its error then read by no one else.
    writer.add_done_callback(_retrieved)
    first = asyncio.ensure_future(_first(receive))
    await asyncio.wait({writer, first}, return_when=asyncio.FIRST_COMPLETED)
    if not first.done():
        # The writer ended before writing anything: its error is the answer, or the
        # document is empty.
        await first
    if writer.done() and writer.exception() is not None and first.result() is None:
        receive.close()
        raise writer.exception()  # type: ignore[misc]
    head = first.result()

    async def body() -> AsyncIterator[str]:
        try:
            if head is not None:
                yield head
                async for piece in receive:
                    yield piece
            await writer  # an error after the first piece cuts the stream
        finally:
            receive.close()  # a client gone: the writer's next piece stops it

    return StreamingResponse(body(), status, headers=headers, media_type=media_type)


async def _first(receive: MemoryObjectReceiveStream[str]) -> str | None:
    try:
        return await receive.receive()
    except anyio.EndOfStream:
        return None


def _hand_over(send: MemoryObjectSendStream[str], piece: str) -> None:
    """In the worker thread: `piece` to the response, waiting while the buffer is full."""

    async def within() -> None:
        try:
            with anyio.fail_after(STALL_S):
                await send.send(piece)
        except TimeoutError:
            raise StalledClient(f"no piece read for {STALL_S:g} s") from None

    from_thread.run(within)


def _retrieved(task: asyncio.Future[None]) -> None:
    # A writer stopped by its client's leaving ends with that error: nothing to report.
    with contextlib.suppress(BaseException):
        task.exception()
