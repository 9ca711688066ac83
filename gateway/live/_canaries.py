"""Canaries: the gate keeps grading a certified agent inside its live traffic.

An eval certifies a snapshot. Between evals the gateway sends each certified
agent cases of its capability's active suite, drawn from the holdout source
(evals._canary: fresh generated instances, or a holdout file's cases), as
live calls: the same executor, the same body, headers and `traceparent`
shape (agents._trace), the network policy of every live call. The agent
cannot tell a canary from a caller's call by anything but its content.

When: a live call answered by an agent triggers a canary to the same agent
and capability with probability `share` (`HOLON_CANARY_SHARE`), so canaries
go where and when traffic goes, at random; and a Poisson process sends each
watched (agent, capability) `floor` canaries a day on average
(`HOLON_CANARY_FLOOR`), with or without traffic. Neither has a period an
agent could count on. A canary is not sent when the agent's spend on
canaries today, plus the case's cap, would pass `ceiling_usd`
(`HOLON_CANARY_CEILING_USD`), nor to an agent version whose record is
missing, stale, imported, graded on another suite than the active one, or
already drifted (only a new eval clears a drift: more canaries would only
cost the operator).

Graded as an eval cell is (evals.run_cell: the suite's checks, its per-case
cap and deadline), billed to the operator: no mandate, budget or rate limit
of any caller is touched and no ledger row written; each canary is a run in
`store.canaries`, which advances the drift test (evals.DriftState) of the
agent version and capability against the record's holdout rate
(`drift_reference`). A drift decided revokes the version's certificates,
and mandates deny the agent (`drift_detected`) within the lookup cache's
second.
"""

from __future__ import annotations

import asyncio
import logging
import random
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from anyio import to_thread
from opentelemetry.trace import Tracer

from agents import Executor
from agents import request_id as new_request_id
from evals import DriftState, canary_case, drift_reference, prepare, run_cell
from evals.fixtures import FixtureCache
from evals.suites import Suite, load_installed
from gateway._loops import Loop
from gateway._tracing import span
from gateway.live._cache import Lookups
from records import AgentRecord, CanaryRun, RecordSplit, Store, utcnow

log = logging.getLogger(__name__)

__all__ = ["FLOOR_TICK_S", "CanaryPolicy", "CanaryResult", "Canaries"]

# How often the floor's Poisson process looks at the watched agents (on average; each
# wait is drawn from an exponential distribution, so looks come at no fixed times).
FLOOR_TICK_S = 60.0
# Canaries in flight at once (a slow agent's canary does not hold up the others').
MAX_IN_FLIGHT = 4
# Nudges waiting for their canary: past it a nudge is dropped (the floor still runs).
MAX_QUEUED = 1000


@dataclass(frozen=True)
class CanaryPolicy:
    """How many canaries, and how much they may cost (the `HOLON_CANARY_*` settings)."""

    share: float  # of live calls answered, each triggers one with this probability
    floor_per_day: float  # per watched agent and capability, on average, traffic or not
    ceiling_usd: Decimal  # per agent and UTC day

    @property
    def on(self) -> bool:
        return self.share > 0 or self.floor_per_day > 0


@dataclass(frozen=True)
class CanaryResult:
    """What one attempt to send a canary came to: `sent` (graded: `passed`) or skipped,
    with the reason (`no_record`, `stale`, `no_holdout`, `drifted`, `ceiling`, ...)."""

    agent_id: str
    capability: str
    sent: bool
    reason: str | None = None
    passed: bool | None = None
    cost_usd: Decimal = Decimal(0)
    drift_decided: bool = False


@dataclass(frozen=True)
class _Target:
    """What a canary to (agent, capability) needs: the record and suite it watches."""

    agent_id: str
    version: str
    manifest: dict[str, Any]
    record: AgentRecord
    suite_id: str
    suite_version: int
    holdout: RecordSplit


class Canaries:
    def __init__(
        self,
        store: Store,
        executor: Executor,
        lookups: Lookups,
        *,
        home: Path,
        policy: CanaryPolicy,
        tracer: Tracer | None = None,
        report: Callable[[CanaryResult], None] | None = None,
        clock: Callable[[], datetime] = utcnow,
        rng: random.Random | None = None,
        floor_tick_s: float = FLOOR_TICK_S,
    ) -> None:
        self.store = store
        self.executor = executor
        self.lookups = lookups
        self.policy = policy
        self.tracer = tracer
        self.report = report
        self.clock = clock
        # The OS's randomness: an agent that could predict the draws could tell canaries.
        self.rng = rng or random.SystemRandom()
        self.floor_tick_s = floor_tick_s
        self._fixtures = FixtureCache(home / "fixtures")
        self._home = home
        self._suites: dict[tuple[str, int], Suite] = {}
        self._queue: asyncio.Queue[tuple[str, str]] | None = None
        self._secret: bytes | None = None
        self.dropped = 0

    # -- the live path ----------------------------------------------------------------

    def nudge(self, agent_id: str, capability: str) -> None:
        """A live call to `agent_id` for `capability` was answered: with probability
        `share`, queue a canary to it. Costs a random draw on the live path."""
        # The share first: a draw from the OS's randomness is a system call.
        if self.policy.share <= 0 or self._queue is None:
            return
        if self.rng.random() >= self.policy.share:
            return
        try:
            self._queue.put_nowait((agent_id, capability))
        except asyncio.QueueFull:
            self.dropped += 1

    # -- the background loop ----------------------------------------------------------

    async def run_forever(self, loop: Loop) -> None:
        """Send the canaries the nudges queue and the floor draws, until cancelled; one
        canary's failure is `loop`'s (logged, counted), never the loop's end."""
        self._queue = asyncio.Queue(MAX_QUEUED)
        in_flight = asyncio.Semaphore(MAX_IN_FLIGHT)
        tasks: set[asyncio.Task[None]] = set()

        async def one(agent_id: str, capability: str) -> None:
            try:
                await self.send(agent_id, capability)
                loop.ok()
            except Exception as exc:
                loop.failed(f"canary to {agent_id} for {capability}", exc)
            finally:
                in_flight.release()

        async def start(agent_id: str, capability: str) -> None:
            await in_flight.acquire()
            task = asyncio.get_running_loop().create_task(one(agent_id, capability))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

        floor = asyncio.get_running_loop().create_task(self._floor(start, loop))
        try:
            loop.ok()
            while True:
                agent_id, capability = await self._queue.get()
                await start(agent_id, capability)
        finally:
            floor.cancel()
            for task in (floor, *tasks):
                task.cancel()
            await asyncio.gather(floor, *tasks, return_exceptions=True)

    async def _floor(self, start: Callable[[str, str], Any], loop: Loop) -> None:
        """A Poisson process per watched (agent, capability) at `floor_per_day` a day: at
        exponentially spaced looks, each pair is sent one with the chance its rate gives
        over the time since the last look (the wait, and the last look's own store read
        and sends: counting the wait alone, a slow read lowered the rate)."""
        if self.policy.floor_per_day <= 0:
            return
        clock = asyncio.get_running_loop()
        last = clock.time()
        while True:
            await asyncio.sleep(self.rng.expovariate(1 / self.floor_tick_s))
            try:
                pairs = await to_thread.run_sync(self._watched)
            except Exception as exc:
                loop.failed("the agents canaries watch", exc)
                continue
            now = clock.time()
            elapsed, last = now - last, now
            chance = min(1.0, self.policy.floor_per_day * elapsed / 86400)
            for agent_id, capability in pairs:
                if self.rng.random() < chance:
                    await start(agent_id, capability)
            loop.ok()

    def _watched(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        cursor = None
        while True:
            page = self.store.agents.list(cursor=cursor, limit=500)
            out += [(a.id, c) for a in page.items if not a.disabled for c in a.capabilities]
            if page.next_cursor is None:
                return out
            cursor = page.next_cursor

    # -- one canary -------------------------------------------------------------------

    async def send(self, agent_id: str, capability: str) -> CanaryResult:
        """Send one canary to `agent_id` for `capability` now (or say why not), grade it
        and advance the drift test."""
        target = await to_thread.run_sync(self._target, agent_id, capability)
        if isinstance(target, str):
            return self._told(CanaryResult(agent_id, capability, False, target))
        suite = await to_thread.run_sync(self._suite, target.suite_id, target.suite_version)
        cap = suite.limits.max_cost_usd
        _, spent = await to_thread.run_sync(self.store.canaries.today, agent_id, self.clock())
        if spent + cap > self.policy.ceiling_usd:
            return self._told(CanaryResult(agent_id, capability, False, "ceiling"))
        if self._secret is None:  # the store's, made once: read once
            self._secret = await to_thread.run_sync(self.store.suites.holdout_secret)
        secret = self._secret
        # A pool lends the subset the record was measured on (evals._canary); cutting it
        # ranks the whole pool, so off the event loop.
        epochs = target.record.holdout_epochs or {}
        draw = secrets.randbits(62)
        case = await to_thread.run_sync(
            lambda: canary_case(suite, secret, draw, epoch=epochs.get(target.suite_id, 0))
        )
        if case is None:
            return self._told(CanaryResult(agent_id, capability, False, "no_holdout"))
        prepared = await to_thread.run_sync(prepare, suite, case, self._fixtures)
        manifest = self.lookups.manifest(target.agent_id, target.version, target.manifest)
        agent_secret = await to_thread.run_sync(self.lookups.secret, agent_id)
        request_id = new_request_id()
        # A span of its own, as a live call has: the agent's traceparent has the same shape.
        with span(self.tracer, "live.call"):
            result = await run_cell(
                self.executor,
                manifest,
                suite,
                prepared,
                secret=agent_secret,
                request_id=request_id,
                tracer=self.tracer,  # each attempt a span, as a live call's
            )
        outcome = result.outcome
        cost = min(outcome.cost_usd, cap)
        run = CanaryRun(
            request_id=request_id,
            agent_id=agent_id,
            agent_version=target.version,
            capability=capability,
            record_eval_id=target.record.eval_id,
            suite_id=suite.id,
            suite_version=suite.version,
            outcome=outcome.code,
            passed=result.passed,
            cost_usd=cost,
            latency_ms=outcome.latency_ms,
            at=self.clock(),
        )
        reference = drift_reference(target.holdout.passed, target.holdout.total)
        decided: list[bool] = []

        def advance(
            state: dict[str, Any] | None, passed: bool
        ) -> tuple[dict[str, Any], dict[str, Any] | None]:
            before = DriftState.against(reference) if not state else DriftState.from_json(state)
            after = before.observe(passed)
            new = after.drift is not None and before.drift is None
            decided.append(new)
            return (
                after.to_json(),
                None if not new or after.drift is None else after.drift.to_json(),
            )

        standing = await to_thread.run_sync(self.store.canaries.record, run, advance)
        drift = bool(decided and decided[-1])
        if drift:
            log.warning(
                "canaries: %s %s drifted on %s: %d of %d passed since eval %s (reference %s)",
                agent_id,
                target.version,
                capability,
                standing.passed,
                standing.graded,
                target.record.eval_id,
                reference,
            )
        return self._told(
            CanaryResult(agent_id, capability, True, None, result.passed, cost, drift)
        )

    def _told(self, result: CanaryResult) -> CanaryResult:
        if self.report is not None:
            self.report(result)
        return result

    def _target(self, agent_id: str, capability: str) -> _Target | str:
        """What a canary would watch, or why there is nothing to."""
        agent = self.store.agents.get(agent_id)
        if agent.disabled or capability not in agent.capabilities:
            return "not_callable"
        record = self.store.evals.current_record_with_staleness(
            agent_id, agent.version, holdout_evals=False
        )
        if record is None or record.issuer is not None:
            return "no_record"
        if record.stale:
            return "stale"
        if record.canaries is not None and (
            (mine := record.canaries.get(capability)) is not None and mine.drifted
        ):
            return "drifted"
        graded = [(i, s) for i, s in record.suites.items() if s.capability == capability]
        active = self.store.suites.for_capability(capability)
        if not graded or active is None:
            return "no_suite"
        suite_id, suite = graded[0]
        if (active.id, active.version) != (suite_id, suite.version):
            return "stale"
        if suite.holdout is None or suite.holdout.total == 0:
            return "no_holdout"
        return _Target(
            agent_id, agent.version, agent.manifest, record, suite_id, suite.version, suite.holdout
        )

    def _suite(self, suite_id: str, version: int) -> Suite:
        key = (suite_id, version)
        suite = self._suites.get(key)
        if suite is None:
            suite = load_installed(self.store, suite_id, self._home, version)
            self._suites[key] = suite
        return suite
