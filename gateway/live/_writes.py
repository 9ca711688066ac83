"""Ledger writes from the event loop: batched per loop turn, committed on the loop.

A live call waits for its reservation to be committed before the agent is
called. Handing that write to a thread costs more than the write: the
thread must get the GIL from a busy event loop (up to a switch interval,
5 ms), and the loop must get it back. On SQLite a commit is a fraction of a
millisecond of local work, so the writes of one loop turn are applied right
there, in one transaction (`LedgerRegistry.apply`), with the wait for
another process's writer bounded by `INLINE_LOCK_WAIT_S`; if the lock
stays taken, or the transaction fails as a whole, the batch goes to the
ledger's group-commit thread instead, which waits as long as it must and
retries a failed group one write at a time, and later batches follow it
there until it has caught up.

On PostgreSQL a group is one statement (records._ledger_pg: the
`holon_ledger_apply` function, in autocommit), awaited on the loop through
psycopg's asyncio connection: no thread, no GIL hand-off, one round trip.
Up to `IN_FLIGHT` groups are in flight at once, each on its own
connection, so a reservation does not wait behind the settlement of the
call before it; the writes that queue while they are all busy are the next
group (at most `MAX_GROUP`). A group that fails as a whole is applied
again one write at a time.

A reservation whose waiter left (a cancelled request) is released as soon
as it is known to exist, whichever path committed it.

`observe` sees every committed row (reserved, settled, denied) as the
ledger gave it back, on the loop: /metrics counts calls and spend per
mandate from it without reading the store.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from concurrent.futures import Future
from decimal import Decimal
from typing import Any

from anyio import get_cancelled_exc_class

from records import (
    EXPIRED_COST_SOURCE,
    BudgetState,
    LedgerEntry,
    LedgerWrite,
    RateState,
    Reserve,
    Settle,
    Store,
)

log = logging.getLogger(__name__)

__all__ = ["INLINE_LOCK_WAIT_S", "LedgerWriter", "charge_of", "release_of"]

# The longest the event loop stands still waiting for another process's
# SQLite writer before the batch goes to the group-commit thread.
INLINE_LOCK_WAIT_S = 0.002
# Writes per PostgreSQL group: bounds one statement's length (and its locks' time).
MAX_GROUP = 256
# PostgreSQL groups in flight at once (a connection each): a reservation need not wait
# for the settlement of the call before it, whose commit waits for the server's flush.
IN_FLIGHT = 3


def release_of(entry: LedgerEntry) -> Settle:
    """The write that gives a reservation back unused (the agent was never called)."""
    return Settle(entry.id, "refused", Decimal(0), "none", 0.0)


def charge_of(entry: LedgerEntry) -> Settle:
    """The write that charges a reservation in full: the call stopped with its outcome
    unknown after the agent may have been called (as an expired reservation is charged)."""
    return Settle(entry.id, "cancelled", entry.reserved_usd, EXPIRED_COST_SOURCE, 0.0)


class LedgerWriter:
    """Batches the ledger writes of one event-loop turn; each write's asyncio future
    resolves once it is committed (to what `LedgerRegistry.apply` gives for it)."""

    def __init__(
        self,
        store: Store,
        *,
        inline: bool | None = None,
        observe: Callable[[LedgerEntry], None] | None = None,
    ) -> None:
        self._store = store
        self._observe = observe
        self._inline = store.dialect == "sqlite" if inline is None else inline
        # PostgreSQL, unless told otherwise: one statement a group, on this loop.
        self._async = (
            store.ledger.async_ledger() if inline is None and store.dialect != "sqlite" else None
        )
        self._pending: list[tuple[LedgerWrite, asyncio.Future[Any]]] = []
        self._scheduled = False
        self._unfinished: set[asyncio.Future[Any]] = set()
        self._in_thread: set[asyncio.Future[None]] = set()
        # PostgreSQL: the writes that wait for a connection, and the groups in flight.
        self._queued: list[tuple[LedgerWrite, asyncio.Future[Any]]] = []
        self._committing: set[asyncio.Task[None]] = set()

    def write(self, write: LedgerWrite) -> asyncio.Future[Any]:
        """Queue `write` for this loop turn's commit."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending.append((write, future))
        self._unfinished.add(future)
        future.add_done_callback(self._unfinished.discard)
        if not self._scheduled:
            self._scheduled = True
            loop.call_soon(self._flush)
        return future

    async def reserve(self, write: Reserve) -> LedgerEntry | BudgetState | RateState:
        """Commit a reservation (or learn that its budget or rate limit refused it). A
        caller cancelled while it waits leaves nothing held: the reservation is dropped if
        not yet applied, else released (its rate-limit token stays taken: records._rate)."""
        future = self.write(write)
        try:
            result: LedgerEntry | BudgetState | RateState = await future
        except get_cancelled_exc_class():
            # Cancelling the wait cancels a queued write (never applied). A
            # write already committed, whose result the caller will not see,
            # is given back here; one in the thread, by `_deliver`.
            if future.done() and not future.cancelled() and future.exception() is None:
                if isinstance(future.result(), LedgerEntry):
                    self.later(release_of(future.result()))
            raise
        return result

    def later(self, write: LedgerWrite) -> None:
        """Queue `write` with nobody waiting for it (a settlement after its answer):
        a failure is logged, and the reservation it meant to settle expires."""
        self.write(write).add_done_callback(_log_failure)

    async def drain(self) -> None:
        """Wait until every write queued so far is committed (or failed)."""
        while self._unfinished:
            await asyncio.wait(set(self._unfinished))

    # -- committing -----------------------------------------------------------

    def close(self) -> None:
        """Close the PostgreSQL connection (after `drain`; the store closes it too)."""
        if self._async is not None:
            self._async.close()

    def _flush(self) -> None:
        self._scheduled = False
        batch = [(w, f) for w, f in self._pending if not f.cancelled()]
        self._pending = []
        if not batch:
            return
        if self._async is not None:
            self._queued += batch
            if len(self._committing) < IN_FLIGHT:
                task = asyncio.get_running_loop().create_task(self._commit_queued())
                self._committing.add(task)
                self._unfinished.add(task)  # `drain` waits for it (and its releases)
                task.add_done_callback(self._unfinished.discard)
                task.add_done_callback(self._committing.discard)
            return
        results = None
        # While writes wait in the thread (the lock is taken: a checkpoint, another
        # process), the next batches join them there instead of each standing
        # the loop still for the bounded wait again.
        if self._inline and not self._in_thread:
            try:
                results = self._store.ledger.apply([w for w, _ in batch], wait_s=INLINE_LOCK_WAIT_S)
            except Exception as exc:  # the thread applies them again, one by one
                log.warning("a ledger batch of %d failed on the loop (%s)", len(batch), exc)
        if results is None:
            loop = asyncio.get_running_loop()
            for write, future in batch:
                # Tracked until delivered, even if its waiter leaves meanwhile:
                # `drain` then also waits for the release `_deliver` queues.
                delivered: asyncio.Future[None] = loop.create_future()
                self._unfinished.add(delivered)
                self._in_thread.add(delivered)
                delivered.add_done_callback(self._unfinished.discard)
                delivered.add_done_callback(self._in_thread.discard)
                deliver = functools.partial(
                    self._deliver, write=write, future=future, delivered=delivered
                )
                self._store.ledger.submit(write).add_done_callback(
                    functools.partial(loop.call_soon_threadsafe, deliver)
                )
            return
        for (_, future), result in zip(batch, results, strict=True):
            self._seen(result)
            _resolve(future, result)

    async def _commit_queued(self) -> None:
        """PostgreSQL: commit what has queued, a group at a time, until nothing is left.

        A group is what queued while every connection was busy (at least one loop
        turn's writes): at one statement a group, the commits keep up with any rate
        the loop makes writes at. A group that fails as a whole is applied again
        one write at a time, so one bad write (a duplicate request id) fails alone.
        """
        assert self._async is not None
        while self._queued:
            group, self._queued = self._queued[:MAX_GROUP], self._queued[MAX_GROUP:]
            # A waiter that left before its group started: never applied.
            group = [(w, f) for w, f in group if not f.cancelled()]
            if not group:
                continue
            writes = [w for w, _ in group]
            try:
                results = await self._async.apply(writes)
            except Exception as exc:
                if len(group) == 1:
                    results = [exc]
                else:
                    log.warning("a ledger group of %d failed (%s); one by one", len(group), exc)
                    results = []
                    for write in writes:
                        try:
                            results += await self._async.apply([write])
                        except Exception as alone:
                            results.append(alone)
            for (write, future), result in zip(group, results, strict=True):
                self._seen(result)
                if future.cancelled():  # its waiter left while it was in flight
                    if isinstance(write, Reserve) and isinstance(result, LedgerEntry):
                        self.later(release_of(result))
                else:
                    _resolve(future, result)

    def _seen(self, result: Any) -> None:
        if self._observe is not None and isinstance(result, LedgerEntry):
            try:
                self._observe(result)
            except Exception:  # metrics never fail a call
                log.exception("observing a ledger row failed")

    def _deliver(
        self,
        done: Future[Any],
        write: LedgerWrite,
        future: asyncio.Future[Any],
        delivered: asyncio.Future[None],
    ) -> None:
        """A write the thread committed: hand its result to the waiter, or clean up after
        a waiter that left."""
        error = done.exception()
        result = error if error is not None else done.result()
        self._seen(result)
        if future.cancelled():
            if isinstance(write, Reserve) and isinstance(result, LedgerEntry):
                self.later(release_of(result))
        else:
            _resolve(future, result)
        delivered.set_result(None)


def _log_failure(future: asyncio.Future[Any]) -> None:
    if future.cancelled():
        return
    error = future.exception()
    if error is not None:
        log.error("a ledger write nobody waits for failed (%s); its reservation expires", error)


def _resolve(future: asyncio.Future[Any], result: Any) -> None:
    if future.done():
        return
    if isinstance(result, BaseException):
        future.set_exception(result)
    else:
        future.set_result(result)
