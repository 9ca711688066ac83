"""`holon worker`: help with any running eval, on any host sharing the store.

A worker claims cells of running evals under the same leases as the eval's
own process, and finishes an eval whose last cell it recorded. Finishing is
idempotent (the first to finish wins, under a row lock), so it does not
matter which process gets there.

A worker rides out a store outage (PostgreSQL restarting, a failover): it
waits with capped exponential backoff and goes on where it was, for at most
`max_outage_s` (the CLI's `--max-outage`; unbounded for the gateway's own
eval workers). Answers its runner had when the store went away are recorded
once the store is back, and the cells it still held are made claimable at
once rather than when their leases run out.

No one eval can stop a worker: whatever working it raises, beyond the store
going away, is logged once with the eval's id and counted (`WorkerStats.
eval_failures`, and the gateway's /metrics through `health`), and the eval
is left alone for `RETRY_FAILED_S` while the worker goes on with the others.
Before, an eval whose plan or cells raised ended `holon worker` and made the
gateway's workers start over on the same eval every 5 s, so no other eval
was worked.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from opentelemetry.trace import Tracer
from sqlalchemy import select

from agents import AddressGuard, run_loop
from evals._eval import pdf_pool_for
from evals._finish import finish
from evals._plan import rebuild
from evals._runner import Runner, cache_for, dead_local_owners, new_owner
from records import CellResultRow, CellStatus, EvalCell, EvalInfo, EvalStatus, Store, utcnow
from schema.errors import HolonError, StoreUnavailable

log = logging.getLogger(__name__)

Report = Callable[[str], None]
# Told the id of each eval this worker saw done at its finish (before its next look).
Finished = Callable[[str], None]

BACKOFF_FIRST_S = 0.5  # the first wait after the store stopped answering
BACKOFF_MAX_S = 15.0  # the longest wait between two tries
RETRY_FAILED_S = 60.0  # how long an eval whose working raised is left alone


class Health(Protocol):
    """Where a worker says it made a pass, and which eval failed it (gateway._loops.Loop)."""

    def ok(self) -> None: ...

    def failed(self, item: str, exc: BaseException) -> None: ...


class _Logged:
    """A worker's health when nobody watches it (`holon worker`): failures are logged."""

    def ok(self) -> None:
        pass

    def failed(self, item: str, exc: BaseException) -> None:
        if isinstance(exc, HolonError):
            log.warning("%s failed: %s", item, exc)
        else:
            log.error("%s failed: %r", item, exc, exc_info=exc)


@dataclass
class WorkerStats:
    evals_worked: set[str] = field(default_factory=set)
    evals_finished: set[str] = field(default_factory=set)
    store_outages: int = 0  # outages ridden out (or, the last one, given up on)
    eval_failures: int = 0  # times working an eval raised (it was left alone a while)


@dataclass
class _Outage:
    """One stretch of the store not answering."""

    started: float = field(default_factory=time.monotonic)
    delay: float = BACKOFF_FIRST_S

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def next_delay(self) -> float:
        delay, self.delay = self.delay, min(self.delay * 2, BACKOFF_MAX_S)
        return delay


def run_worker(
    store: Store,
    *,
    home: Path,
    once: bool = False,
    poll_s: float = 1.0,
    stop: threading.Event | None = None,
    report: Report | None = None,
    max_outage_s: float | None = None,
    address_guard: AddressGuard | None = None,
    tracer: Tracer | None = None,
    finished: Finished | None = None,
    health: Health | None = None,
) -> WorkerStats:
    """Work running evals until stopped (or, with `once`, until none has work left).

    While the store is unreachable, wait for it (0.5 s doubling to 15 s
    between tries); after `max_outage_s` (None: never) raise the last
    StoreUnavailable. Setting `stop` ends a wait at once. Any other error is
    the failure of the eval it came from (above). `address_guard` judges every connection to an
    agent (a gateway's network policy, for its own eval workers); `tracer`
    makes a span of each cell (a gateway's tracing). `finished` is told each
    eval this worker finished (or found finished) done, once; it should return
    at once (the gateway hands the id to a thread), and an error it raises is
    logged, never the worker's. `health` is told of each pass and of each eval
    whose working raised (then left alone for RETRY_FAILED_S); without it such
    failures are logged.
    """
    owner = new_owner()
    stats = WorkerStats()
    stop = stop or threading.Event()
    say = report or (lambda message: None)
    # Per eval whose runner the store failed under: the answers it could not
    # record (maybe none). Its claims are still this owner's in the store.
    unsettled: dict[str, list[CellResultRow]] = {}
    outage: _Outage | None = None
    watcher = health or _Logged()
    resting: dict[str, float] = {}  # eval id -> when it may be worked again (monotonic)
    while not stop.is_set():
        try:
            if outage is not None:
                recorded = _recover(store, owner, unsettled)
                took = outage.elapsed()
                log.info("the store answers again after %.1f s; going on", took)
                say(
                    f"the store answers again after {took:.1f} s"
                    + (f"; recorded {recorded} answers held meanwhile" if recorded else "")
                )
                outage = None
            worked = False
            for info in store.evals.running():
                if resting.get(info.id, 0.0) > time.monotonic():
                    continue
                resting.pop(info.id, None)
                try:
                    worked |= _work_eval(
                        store,
                        info,
                        home,
                        owner,
                        stats,
                        say,
                        unsettled,
                        address_guard,
                        tracer,
                        finished,
                    )
                except StoreUnavailable:
                    raise  # not this eval's fault: wait for the store
                except Exception as exc:  # one eval's failure, never the others'
                    stats.eval_failures += 1
                    resting[info.id] = time.monotonic() + RETRY_FAILED_S
                    watcher.failed(f"eval {info.id}", exc)
            watcher.ok()
        except StoreUnavailable as exc:
            began = outage is None
            if outage is None:
                outage = _Outage()
                stats.store_outages += 1
            elapsed = outage.elapsed()
            if max_outage_s is not None and elapsed >= max_outage_s:
                exc.hint = (
                    f"the store did not answer for {elapsed:.0f} s; start the worker again "
                    "once it does (what was recorded stays recorded, the cells it held are "
                    "claimed again), or give it longer with `holon worker --max-outage SECONDS`"
                )
                exc.details.setdefault("outage_s", round(elapsed, 1))
                exc.details.setdefault("max_outage_s", max_outage_s)
                raise
            if began:
                held = sum(len(rows) for rows in unsettled.values())
                log.warning(
                    "%s; waiting for the store to answer again (retrying after %g s, "
                    "backing off to every %g s, %s)%s",
                    exc,
                    BACKOFF_FIRST_S,
                    BACKOFF_MAX_S,
                    "for as long as it takes"
                    if max_outage_s is None or math.isinf(max_outage_s)
                    else f"for at most {max_outage_s:g} s",
                    f"; {held} answers held for recording" if held else "",
                )
            delay = outage.next_delay()
            if max_outage_s is not None:
                # One last try right at the bound: an outage of exactly the bound is ridden out.
                delay = min(delay, max_outage_s - elapsed)
            stop.wait(delay)
            continue
        if once and not worked:
            break
        if not worked:
            stop.wait(poll_s)
    if unsettled:
        log.warning(
            "stopped while the store was away: %d answers not recorded; their cells are "
            "claimed again when their leases end",
            sum(len(rows) for rows in unsettled.values()),
        )
    return stats


def _work_eval(
    store: Store,
    info: EvalInfo,
    home: Path,
    owner: str,
    stats: WorkerStats,
    say: Report,
    unsettled: dict[str, list[CellResultRow]],
    address_guard: AddressGuard | None,
    tracer: Tracer | None = None,
    finished: Finished | None = None,
) -> bool:
    """Work one running eval if it has cells to claim (whether it had), and finish it."""
    worked = False
    counts = store.evals.counts(info.id)
    # A plan that cannot be rebuilt here (a suite missing on this host) is the
    # eval's failure: logged, and tried again after a rest, not on every look.
    plan = rebuild(store, info.plan, home=home)
    # Cells left `running` by a worker that died count as work too: with
    # none pending, nobody else would ever reclaim them.
    if counts[CellStatus.PENDING] or (counts[CellStatus.RUNNING] and _reclaimable(store, info.id)):
        worked = True
        stats.evals_worked.add(info.id)
        say(f"working eval {info.id} ({info.agent_id} {info.agent_version})")
        with pdf_pool_for(plan) as pdf:
            runner = Runner(
                store,
                plan,
                info.id,
                cache=cache_for(home),
                pdf=pdf,
                owner=owner,
                wait_for_others=False,
                address_guard=address_guard,
                tracer=tracer,
            )
            try:
                run_loop(runner.run())
            except StoreUnavailable:
                # The runner has stopped (every cell it started answered);
                # what it could not commit is recorded when the store is back.
                unsettled.setdefault(info.id, []).extend(runner.pending_rows)
                raise
        counts = store.evals.counts(info.id)
    if counts[CellStatus.PENDING] == 0 and counts[CellStatus.RUNNING] == 0:
        try:
            done = finish(store, plan, store.evals.get(info.id))
        except StoreUnavailable:
            raise
        except HolonError:
            return worked  # not complete after all (a cell was given back meanwhile)
        if done.status == EvalStatus.DONE and info.id not in stats.evals_finished:
            stats.evals_finished.add(info.id)
            say(f"eval {info.id} is complete")
            if finished is not None:
                try:
                    finished(info.id)
                except Exception:  # the eval is done whatever its listener does
                    log.exception("after eval %s finished", info.id)
    return worked


def _recover(store: Store, owner: str, unsettled: dict[str, list[CellResultRow]]) -> int:
    """The store answers again: record the answers held, free the cells still held.

    Raises StoreUnavailable while the store is still away (this is the probe).
    Safe to repeat: a result records only onto its own claim of a cell still
    `running`, and no runner of this owner is working when this runs, so its
    remaining leases (cells claimed and never started, a claim whose reply was
    lost) hold nothing anyone is working on.
    """
    store.evals.running()  # the probe, when nothing is held
    recorded = 0
    for eval_id in list(unsettled):
        rows = unsettled[eval_id]
        if rows:
            done = store.evals.record(eval_id, rows, owner=owner)
            recorded += len(done)
            if len(done) < len(rows):
                log.warning(
                    "eval %s: %d answers held through the outage not recorded (lease lost)",
                    eval_id,
                    len(rows) - len(done),
                )
            unsettled[eval_id] = []
        store.evals.expire_leases(eval_id, [owner])
        del unsettled[eval_id]
    return recorded


def _reclaimable(store: Store, eval_id: str) -> bool:
    """Whether some running cell has no live holder: its lease ran out, or its
    process (on this host) is gone. Few rows: running cells are at most the
    workers' concurrency."""
    with store.read() as session:
        rows = session.execute(
            select(EvalCell.lease_owner, EvalCell.lease_expires_at).where(
                EvalCell.eval_id == eval_id, EvalCell.status == CellStatus.RUNNING
            )
        ).all()
    now = utcnow()
    if any(expires is not None and expires < now for _, expires in rows):
        return True
    return bool(dead_local_owners(sorted({owner for owner, _ in rows if owner})))
