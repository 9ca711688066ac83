"""Working an eval's cells (EVALS.md, steps 3 to 5): claim, execute, grade, record.

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
import functools
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from agents import Executor
from evals._cell import CellResult, PreparedCase, prepare, run_cell
from evals._plan import Plan
from evals.checks import PdfPool
from evals.fixtures import FixtureCache
from evals.suites import Case, Suite
from records import CellResultRow, ClaimedCell, Store
from schema import make_validator
from schema.errors import EnvironmentFault, HolonError

log = logging.getLogger(__name__)

Progress = Callable[[dict[str, Any]], None]

GRADING_MARGIN_S = 30.0
MAX_INFRASTRUCTURE_FAILURES = 3


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


@dataclass
class _Tally:
    done: int = 0
    passed: int = 0


class Runner:
    """Works one eval's cells until none is left to claim."""

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
    ) -> None:
        self.store = store
        self.plan = plan
        self.eval_id = eval_id
        self.cache = cache
        self.pdf = pdf
        self.owner = owner or new_owner()
        # Claims come in batches; a new one is fetched once half a batch of
        # slots is free, so claim transactions stay few and short.
        self.batch = batch or max(1, plan.concurrency)
        self.progress = progress
        self.flush_interval_s = flush_interval_s
        # The eval's own process waits for other workers' cells (to finish the
        # eval); a `holon worker` moves on to other evals instead.
        self.wait_for_others = wait_for_others
        self.cases: dict[tuple[str, str, str], Case] = plan.cases()
        self.suites: dict[str, Suite] = {p.suite.id: p.suite for p in plan.suites}
        longest = max(float(p.suite.limits.timeout_s) for p in plan.suites)
        self.lease_s = longest * (plan.retries + 1) + GRADING_MARGIN_S
        self.failures: dict[int, int] = {}
        self.inflight: dict[int, int] = {}  # idx -> fence
        self.pending_rows: list[CellResultRow] = []
        self.cancelled = False
        # Repetitions of a case share its expanded input (read-only from here on).
        self.prepared: dict[tuple[str, str, str], PreparedCase] = {}
        self.validators = {p.suite.id: make_validator(p.suite.input_schema) for p in plan.suites}
        self.tally: dict[str, Any] | None = None  # progress: this process's view
        self.fatal: HolonError | None = None  # raised by run() once the workers stop

    # -- the loop -----------------------------------------------------------

    async def run(self) -> None:
        store = self.store
        dead = dead_local_owners(await asyncio.to_thread(store.evals.running_owners, self.eval_id))
        if dead:
            reclaimed = await asyncio.to_thread(store.evals.expire_leases, self.eval_id, dead)
            log.info("eval %s: %d cells of dead local workers reclaimed", self.eval_id, reclaimed)
        secret = await asyncio.to_thread(store.agents.secret, self.plan.agent.id)
        tasks: set[asyncio.Task[None]] = set()
        writer = asyncio.create_task(self._writer())
        heartbeat = asyncio.create_task(self._heartbeat())
        last_start = 0.0
        last_status_check = time.monotonic()
        try:
            async with Executor() as executor:
                while not self.cancelled:
                    if time.monotonic() - last_status_check > 1.0:
                        # `holon evals cancel` from another process: stop claiming.
                        last_status_check = time.monotonic()
                        current = await asyncio.to_thread(store.evals.get, self.eval_id)
                        if current.status != "running":
                            break
                    free = self.plan.concurrency - len(tasks)
                    claimed: list[ClaimedCell] = []
                    if free >= max(1, self.batch // 2) or (free > 0 and not tasks):
                        claimed = await asyncio.to_thread(
                            store.evals.claim,
                            self.eval_id,
                            self.owner,
                            min(free, self.batch),
                            self.lease_s,
                        )
                    for cell in claimed:
                        if self.plan.pace_s:
                            wait = last_start + self.plan.pace_s - time.monotonic()
                            if wait > 0:
                                await asyncio.sleep(wait)
                            last_start = time.monotonic()
                        self.inflight[cell.idx] = cell.fence
                        task = asyncio.create_task(self._cell(executor, cell, secret))
                        tasks.add(task)
                        task.add_done_callback(tasks.discard)
                    if claimed:
                        continue
                    if tasks:
                        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                        continue
                    await self._flush()
                    status = await asyncio.to_thread(store.evals.get, self.eval_id)
                    if status.status == "cancelled":
                        break
                    counts = await asyncio.to_thread(store.evals.counts, self.eval_id)
                    if counts["pending"] == 0 and counts["running"] == 0:
                        break
                    if not self.wait_for_others:
                        break
                    # Other workers hold the rest: wait for them, or for their leases to end.
                    await asyncio.sleep(0.25)
                if tasks:
                    await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            writer.cancel()
            heartbeat.cancel()
            await asyncio.gather(writer, heartbeat, return_exceptions=True)
            await self._flush()
        if self.fatal is not None:
            raise self.fatal

    async def _cell(self, executor: Executor, cell: ClaimedCell, secret: str | None) -> None:
        suite = self.suites[cell.suite_id]
        case = self.cases[(cell.suite_id, cell.split, cell.case_id)]
        key = (cell.suite_id, cell.split, cell.case_id)
        try:
            prepared = self.prepared.get(key)
            if prepared is None:
                prepared = await asyncio.to_thread(
                    functools.partial(
                        prepare,
                        suite,
                        case,
                        self.cache,
                        input_validator=self.validators[suite.id],
                    )
                )
                self.prepared[key] = prepared
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
            )
        except HolonError as exc:
            await self._infrastructure_failure(cell, exc)
            return
        self.pending_rows.append(_row(cell, result))

    async def _infrastructure_failure(self, cell: ClaimedCell, exc: HolonError) -> None:
        count = self.failures.get(cell.idx, 0) + 1
        self.failures[cell.idx] = count
        log.warning("eval %s cell %d: %s (attempt %d)", self.eval_id, cell.idx, exc, count)
        self.inflight.pop(cell.idx, None)
        await asyncio.to_thread(self.store.evals.release, self.eval_id, cell.idx, cell.fence)
        if count >= MAX_INFRASTRUCTURE_FAILURES and self.fatal is None:
            # Stop claiming; run() raises this once the cells in flight are done.
            self.cancelled = True
            self.fatal = EnvironmentFault(
                f"cell {cell.idx} failed {count} times outside the agent: {exc}",
                hint=f"fix the cause, then `holon evals resume {self.eval_id}`",
            )

    # -- group commits and heartbeats -----------------------------------------

    async def _writer(self) -> None:
        while True:
            await asyncio.sleep(self.flush_interval_s)
            await self._flush()

    async def _flush(self) -> None:
        if not self.pending_rows:
            return
        rows, self.pending_rows = self.pending_rows, []
        recorded = await asyncio.to_thread(
            functools.partial(self.store.evals.record, self.eval_id, rows, owner=self.owner)
        )
        for row in rows:
            self.inflight.pop(row.idx, None)
        lost = len(rows) - len(recorded)
        if lost:
            log.warning("eval %s: %d results not recorded (lease lost)", self.eval_id, lost)
        if self.progress is not None:
            if self.tally is None:
                self.tally = await asyncio.to_thread(self.store.evals.progress, self.eval_id)
            else:
                done = set(recorded)
                for row in rows:
                    if row.idx in done:
                        self.tally["done"] += 1
                        self.tally["passed"] += int(row.passed)
                        self.tally["cost_usd"] += Decimal(row.cost_usd)
            self.progress(dict(self.tally))

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(max(1.0, self.lease_s / 3))
            held = dict(self.inflight)
            if held:
                await asyncio.to_thread(
                    self.store.evals.renew, self.eval_id, self.owner, held, self.lease_s
                )


def _row(cell: ClaimedCell, result: CellResult) -> CellResultRow:
    outcome = result.outcome.to_json()
    output = outcome.pop("output", None)
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
