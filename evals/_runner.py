"""Working an eval's cells (docs/evals.md, "The run", steps 3 to 5): claim, execute, grade, record.

Any number of runners (the `holon eval` process, `holon worker` processes,
on any host) work one eval together: each claims small batches of cells
under a lease, renews the leases of the cells it holds by heartbeat, and
records results in group commits, each result fenced to its claim. A
runner that dies leaves `running` cells whose leases expire; whoever claims
them next sends them again with the same request id. An infrastructure
failure (the grader's clock guard, a broken fixture) gives the cell back
instead of grading it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

from opentelemetry.context import Context
from opentelemetry.trace import Tracer

from agents import AddressGuard, Executor
from evals._cell import CellResult, PreparedCase, output_fits, prepare, run_cell, stored_output
from evals._plan import Plan
from evals.checks import PdfPool
from evals.fixtures import FixtureCache
from evals.suites import Case, Suite
from records import CellResultRow, CellStatus, ClaimedCell, EvalStatus, Store
from schema import make_validator, quick_validity
from schema.errors import EnvironmentFault, HolonError

log = logging.getLogger(__name__)

Progress = Callable[[dict[str, Any]], None]
_T = TypeVar("_T")

GRADING_MARGIN_S = 30.0
MAX_INFRASTRUCTURE_FAILURES = 3
STATUS_EVERY_S = 1.0  # how stale a runner's view of the eval's status may get
TALLY_EVERY_S = 0.25  # a shared runner's progress: how often the store's tally is read again
INLINE_LOCK_WAIT_S = 0.05  # the longest a group commit on the event loop waits for SQLite
CLAIM_RETRY_S = 0.25  # after a claim that found nothing, the wait before the next


def new_owner() -> str:
    """Who holds a lease: host, process and a random part (a restarted pid differs)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def dead_local_owners(owners: list[str]) -> list[str]:
    """Owners on this host whose process is gone: their leases need not run out."""
    host = socket.gethostname()
    dead = []
    for owner in owners:
        owner_host, _, rest = owner.partition(":")
        pid_text = rest.partition(":")[0]
        if owner_host != host or not pid_text.isdigit():
            continue
        try:
            os.kill(int(pid_text), 0)
        except ProcessLookupError:
            dead.append(owner)
        except PermissionError:
            pass  # alive, someone else's
    return dead


class Runner:
    """Works one eval's cells until none is left to claim.

    `concurrency` worker coroutines take claimed cells from a queue; one
    feeder keeps the queue stocked a batch ahead (workers never wait on a
    claim) and records finished results, both in one transaction per round.
    Every store call runs on one dedicated thread: this runner's transactions
    never queue on one another's SQLite write lock, and the connection stays
    open between them.
    """

    def __init__(
        self,
        store: Store,
        plan: Plan,
        eval_id: str,
        *,
        cache: FixtureCache,
        pdf: PdfPool | None,
        owner: str | None = None,
        batch: int | None = None,
        progress: Progress | None = None,
        flush_interval_s: float = 0.05,
        wait_for_others: bool = True,
        address_guard: AddressGuard | None = None,
        tracer: Tracer | None = None,
        shared: bool = False,
        claim_retry_s: float = CLAIM_RETRY_S,
    ) -> None:
        self.store = store
        # Each cell's span (eval.cell), a trace of its own: cells sharing a trace
        # id would tell the agent they belong together, as live calls do not.
        self.tracer = tracer
        # A gateway's network policy, for the calls its own eval workers make.
        self.address_guard = address_guard
        self.plan = plan
        self.eval_id = eval_id
        self.cache = cache
        self.pdf = pdf
        self.owner = owner or new_owner()
        # Cells are claimed in batches of up to `batch`, as soon as half a batch
        # of room is free; up to a batch beyond the workers waits claimed.
        self.batch = batch or max(1, plan.concurrency)
        self.capacity = plan.concurrency + self.batch
        self.refill = max(1, self.batch // 2)
        self.progress = progress
        self.flush_interval_s = flush_interval_s
        self.claim_retry_s = claim_retry_s
        # The eval's own process waits for other workers' cells (to finish the
        # eval); a `holon worker` moves on to other evals instead.
        self.wait_for_others = wait_for_others
        self.cases: dict[tuple[str, str, str], Case] = plan.cases()
        self.suites: dict[str, Suite] = {p.suite.id: p.suite for p in plan.suites}
        longest = max(float(p.suite.limits.timeout_s) for p in plan.suites)
        self.lease_s = longest * (plan.retries + 1) + GRADING_MARGIN_S
        self.failures: dict[int, int] = {}
        self.inflight: dict[int, int] = {}  # idx -> fence, claimed and not yet recorded
        self.pending_rows: list[CellResultRow] = []
        self.running = 0  # cells a worker has taken from the queue and not finished
        self.cancelled = False  # stop claiming (cancelled, or a fatal fault)
        # Repetitions of a case share its expanded input (read-only from here on).
        self.prepared: dict[tuple[str, str, str], PreparedCase] = {}
        self.validators = {
            p.suite.id: (make_validator(p.suite.input_schema), quick_validity(p.suite.input_schema))
            for p in plan.suites
        }
        self.tally: dict[str, Any] | None = None  # progress: this process's view
        # Other local processes work this eval too (evals._processes): the tally is
        # read again from the store now and then, so progress counts their cells.
        self.shared = shared
        self._tally_at = 0.0
        self.fatal: HolonError | None = None  # raised by run() once the workers stop
        self._queue: asyncio.Queue[ClaimedCell | None] = asyncio.Queue()
        self._wake = asyncio.Event()
        self._db_thread: ThreadPoolExecutor | None = None
        self.inline = store.dialect == "sqlite"
        # Beside other local processes of the eval (shared), a taken lock is
        # most likely a sibling's commit: the store thread waits for it, not the loop
        # (measured: a third to a half less time on the loop in commits, bench/eval).
        self.inline_wait_s = 0.0 if shared else INLINE_LOCK_WAIT_S
        self._unstarted: dict[int, int] = {}
        self._last_start = 0.0
        self._pace_lock = asyncio.Lock()

    async def _db(self, fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        """Run a store call on this runner's store thread."""
        assert self._db_thread is not None
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._db_thread, functools.partial(fn, *args, **kwargs))

    # -- the loop -----------------------------------------------------------

    async def run(self) -> None:
        store = self.store
        self._db_thread = ThreadPoolExecutor(1, thread_name_prefix="holon-eval-store")
        try:
            dead = dead_local_owners(await self._db(store.evals.running_owners, self.eval_id))
            if dead:
                reclaimed = await self._db(store.evals.expire_leases, self.eval_id, dead)
                log.info(
                    "eval %s: %d cells of dead local workers reclaimed", self.eval_id, reclaimed
                )
            secret = await self._db(store.agents.secret, self.plan.agent.id)
            heartbeat = asyncio.create_task(self._heartbeat())
            try:
                async with Executor(address_guard=self.address_guard) as executor:
                    workers = [
                        asyncio.create_task(self._work(executor, secret))
                        for _ in range(self.plan.concurrency)
                    ]
                    try:
                        await self._feed()
                    finally:
                        # Cells claimed but never started go back; then the workers stop.
                        unstarted = self._drain()
                        for _ in workers:
                            self._queue.put_nowait(None)
                        await asyncio.gather(*workers, return_exceptions=True)
                        await self._flush()
                        if unstarted:
                            await self._db(store.evals.release_many, self.eval_id, unstarted)
            finally:
                heartbeat.cancel()
                await asyncio.gather(heartbeat, return_exceptions=True)
        finally:
            self._db_thread.shutdown(wait=True)
            self._db_thread = None
        if self.fatal is not None:
            raise self.fatal

    async def _feed(self) -> None:
        """Record finished results and claim more, one transaction a round, until done."""
        next_claim = 0.0  # after a claim that found nothing, wait before the next
        # ... unless this runner's own cells were still in flight then: once they are
        # all answered, claim at once (in the commit of their last results). Most
        # often nothing is left and the runner ends there, instead of idling out the
        # wait: 0.2 s of a 20 ms agent's eval at concurrency 64, whose ideal time is
        # 0.625 s (bench/eval); each process of `--processes N` had that tail too.
        claim_when_idle = False
        last_settle = time.monotonic()
        while True:
            now = time.monotonic()
            want = 0
            room = self.capacity - self._queue.qsize() - self.running
            if claim_when_idle and not self.running and self._queue.empty():
                claim_when_idle = False
                next_claim = now
            if not self.cancelled and room >= self.refill and now >= next_claim:
                want = min(room, self.batch)
            # A round also reads the eval's status: at least one a second.
            if want or self.pending_rows or now - last_settle > STATUS_EVERY_S:
                claimed = await self._settle(want)
                last_settle = time.monotonic()
                if want and not claimed:
                    next_claim = last_settle + self.claim_retry_s
                    # (results that came in during that commit count as cells in flight)
                    claim_when_idle = bool(
                        self.running or not self._queue.empty() or self.pending_rows
                    )
                    if not await self._more_to_do():
                        return
                continue
            if self.cancelled and not self.running:
                return
            self._wake.clear()
            timeout = STATUS_EVERY_S
            if next_claim > now:
                timeout = min(timeout, next_claim - now)
            if self.running:
                # Results trickle in: record them within the flush interval.
                timeout = min(timeout, self.flush_interval_s)
            # asyncio.timeout, not wait_for: on Python 3.11, wait_for swallows a cancellation
            # (Ctrl-C) that arrives as the wake-up does, and the runner ran on.
            try:
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
            except TimeoutError:
                pass

    async def _more_to_do(self) -> bool:
        """A claim found nothing: whether to keep going (own cells in flight, or others')."""
        if self.running or not self._queue.empty() or self.pending_rows:
            return True
        if self.cancelled or not self.wait_for_others:
            return False
        counts = await self._db(self.store.evals.counts, self.eval_id)
        if counts[CellStatus.RUNNING] and not counts[CellStatus.PENDING]:
            # A worker on this host that died mid-eval holds the rest: take its
            # cells back now rather than when their leases run out.
            owners = await self._db(self.store.evals.running_owners, self.eval_id)
            dead = dead_local_owners(owners)
            if dead:
                await self._db(self.store.evals.expire_leases, self.eval_id, dead)
                return True
        # Other workers hold the rest: wait for them, or for their leases to end.
        return bool(counts[CellStatus.PENDING] or counts[CellStatus.RUNNING])

    async def _settle(self, want: int) -> list[ClaimedCell]:
        """One group commit: the results so far, and (`want` > 0) a claim."""
        rows, self.pending_rows = self.pending_rows, []
        settle = functools.partial(
            self.store.evals.record_and_claim,
            self.eval_id,
            rows,
            owner=self.owner,
            claim=want,
            lease_s=self.lease_s,
        )
        # SQLite right here on the event loop, unless another writer holds the
        # lock: a few milliseconds of local work, where a thread would wait for
        # the GIL at each of the dozens of steps SQLite releases it for, while
        # the workers keep it busy. The wait for another writer is bounded, so
        # an agent's deadline never runs out while the loop stands still.
        try:
            settled = settle(wait_s=self.inline_wait_s) if self.inline else None
            if settled is None:
                settled = await self._db(settle)
                assert settled is not None  # without `wait_s`, a settle waits for the lock
        except BaseException:
            # Not recorded (StoreUnavailable, or cancelled): the answers stay for the
            # next commit (the flush as the runner stops, or `holon worker` once the
            # store is back) instead of being run again. A commit that did land and
            # only lost its reply records nothing twice: recording is fenced to cells
            # still `running` under the claim's fence.
            self.pending_rows[:0] = rows
            raise
        if settled.status != EvalStatus.RUNNING:
            # `holon evals cancel` from another process (or finished): stop claiming.
            self.cancelled = True
        # Queued before anything else is awaited: a runner stopped in that await
        # gives its claimed cells back instead of leaving them held.
        for cell in settled.claimed:
            self.inflight[cell.idx] = cell.fence
            self._queue.put_nowait(cell)
        await self._recorded(rows, settled.recorded)
        return settled.claimed

    def _drain(self) -> dict[int, int]:
        """The cells claimed and never started, taken off the queue (and the heartbeat)."""
        unstarted, self._unstarted = self._unstarted, {}
        while not self._queue.empty():
            cell = self._queue.get_nowait()
            if cell is not None:
                unstarted[cell.idx] = cell.fence
        for idx in unstarted:
            self.inflight.pop(idx, None)
        return unstarted

    async def _work(self, executor: Executor, secret: str | None) -> None:
        while True:
            cell = await self._queue.get()
            if cell is None:
                return
            if self.cancelled:
                self._unstarted[cell.idx] = cell.fence  # given back when the runner stops
                self._wake.set()
                continue
            self.running += 1
            try:
                if self.plan.pace_s:
                    await self._pace()
                await self._cell(executor, cell, secret)
            finally:
                self.running -= 1
            if (
                len(self.pending_rows) >= self.refill
                or self.capacity - self._queue.qsize() - self.running >= self.refill
                or self.cancelled
            ):
                self._wake.set()

    async def _pace(self) -> None:
        async with self._pace_lock:
            wait = self._last_start + self.plan.pace_s - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last_start = time.monotonic()

    async def _cell(self, executor: Executor, cell: ClaimedCell, secret: str | None) -> None:
        suite = self.suites[cell.suite_id]
        key = (cell.suite_id, cell.split, cell.case_id)
        try:
            prepared = self.prepared.get(key)
            if prepared is None:
                validator, quick = self.validators[suite.id]
                work = functools.partial(
                    prepare,
                    suite,
                    self.cases[key],
                    self.cache,
                    input_validator=validator,
                    input_quick=quick,
                )
                # Fixtures may read files or the network: off the event loop.
                # A suite without any expands in microseconds: a thread hop
                # would cost more.
                prepared = await asyncio.to_thread(work) if suite.fixtures else work()
                self.prepared[key] = prepared
            with self._span(cell) as current:
                result = await run_cell(
                    executor,
                    self.plan.agent,
                    suite,
                    prepared,
                    repetition=cell.repetition,
                    pdf=self.pdf,
                    secret=secret,
                    request_id=cell.request_id,
                    unreachable_retries=self.plan.retries,
                    tracer=self.tracer,
                )
                if current is not None:
                    current.set_attributes(
                        {"holon.outcome": result.outcome.code, "holon.passed": result.passed}
                    )
        except HolonError as exc:
            await self._infrastructure_failure(cell, exc)
            return
        except Exception as exc:  # a bug of ours: give the cell back, keep the worker
            log.exception("eval %s cell %d: unexpected error", self.eval_id, cell.idx)
            await self._infrastructure_failure(cell, EnvironmentFault(f"unexpected error: {exc}"))
            return
        if output_fits(result.outcome):
            row = _row(cell, result)
        else:  # writing out a large output to measure it would hold up the other cells
            row = await asyncio.to_thread(_row, cell, result)
        self.pending_rows.append(row)

    def _span(self, cell: ClaimedCell) -> contextlib.AbstractContextManager[Any]:
        """The cell's root span (its traceparent is the agent's), or nothing."""
        if self.tracer is None:
            return contextlib.nullcontext()
        return self.tracer.start_as_current_span(
            "eval.cell",
            context=Context(),  # a root: no parent, whatever is current
            attributes={
                "holon.eval_id": self.eval_id,
                "holon.cell": cell.idx,
                "holon.suite": cell.suite_id,
                "holon.agent": self.plan.agent.id,
                "holon.request_id": cell.request_id,
            },
        )

    async def _infrastructure_failure(self, cell: ClaimedCell, exc: HolonError) -> None:
        count = self.failures.get(cell.idx, 0) + 1
        self.failures[cell.idx] = count
        log.warning("eval %s cell %d: %s (attempt %d)", self.eval_id, cell.idx, exc, count)
        self.inflight.pop(cell.idx, None)
        await self._db(self.store.evals.release, self.eval_id, cell.idx, cell.fence)
        if count >= MAX_INFRASTRUCTURE_FAILURES and self.fatal is None:
            # Stop claiming; run() raises this once the cells in flight are done.
            self.cancelled = True
            self._wake.set()
            self.fatal = EnvironmentFault(
                f"cell {cell.idx} failed {count} times outside the agent: {exc}",
                hint=f"fix the cause, then `holon evals resume {self.eval_id}`",
            )

    # -- group commits and heartbeats -----------------------------------------

    async def _flush(self) -> None:
        if self.pending_rows:
            await self._settle(0)

    async def _recorded(self, rows: list[CellResultRow], recorded: list[int]) -> None:
        if not rows:
            return
        for row in rows:
            self.inflight.pop(row.idx, None)
        lost = len(rows) - len(recorded)
        if lost:
            log.warning("eval %s: %d results not recorded (lease lost)", self.eval_id, lost)
        if self.progress is not None:
            now = time.monotonic()
            if self.tally is None or (self.shared and now - self._tally_at >= TALLY_EVERY_S):
                self.tally = await self._db(self.store.evals.progress, self.eval_id)
                self._tally_at = now
            else:
                done = set(recorded)
                for row in rows:
                    if row.idx in done:
                        self.tally["done"] += 1
                        self.tally["passed"] += int(row.passed)
                        spent = Decimal(self.tally["cost_usd"]) + Decimal(row.cost_usd)
                        self.tally["cost_usd"] = str(spent)
            self.progress(dict(self.tally))

    async def _heartbeat(self) -> None:
        """Renew the leases of the cells in flight, whatever one renewal raises: a heartbeat
        that ended would let them lapse under cells still being worked (and another worker
        would call the agent for them again)."""
        while True:
            await asyncio.sleep(max(1.0, self.lease_s / 3))
            held = dict(self.inflight)
            if not held:
                continue
            try:
                await self._db(self.store.evals.renew, self.eval_id, self.owner, held, self.lease_s)
            except Exception as exc:  # the next beat tries again (an outage: commits see it too)
                log.warning(
                    "eval %s: renewing the leases of %d cells failed: %r",
                    self.eval_id,
                    len(held),
                    exc,
                    exc_info=not isinstance(exc, HolonError),
                )


def _row(cell: ClaimedCell, result: CellResult) -> CellResultRow:
    outcome = result.outcome.to_json()
    outcome.pop("output", None)
    if result.grade_ms is not None:  # kept beside the agent's latency (reports show both)
        outcome["grade_ms"] = round(result.grade_ms, 3)
    output = stored_output(result.outcome)  # bounded; grading had the whole output
    return CellResultRow(
        idx=cell.idx,
        fence=cell.fence,
        outcome_code=result.outcome.code,
        passed=result.passed,
        cost_usd=str(result.outcome.cost_usd),
        latency_ms=float(result.outcome.latency_ms),
        attempts=result.outcome.attempt_count,
        outcome=outcome,
        output=output,
        checks=None if result.grade is None else [r.to_json() for r in result.grade.results],
    )


def cache_for(home: Path) -> FixtureCache:
    return FixtureCache(home / "cache" / "fixtures")
