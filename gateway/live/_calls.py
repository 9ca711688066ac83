"""Live calls under mandates (GATEWAY.md): decide, reserve, call, settle.

Every live call goes the same way: the holder's mandates decide first (a
pure function of the mandates, the agent's record and the clock); an allowed
call reserves its worst case (the mandate's per-call cap) against the
mandate's budget in the ledger; the one executor calls the agent; the ledger
row is settled to min(cost, cap). A denied call is recorded too, with each
mandate's reason and numbers. The executor is the same one eval cells use,
with the mandate's cap and deadline enforced on the gateway's side.

The store is synchronous (SQLAlchemy). The decision needs the agent, the
holder's mandates and maybe the record: when they are all in the lookup
cache (the common case) it is made on the loop, else in a worker thread.
Ledger writes (reserve, settle, deny) go through a `LedgerWriter`, which
commits the writes of one loop turn together, on the loop (SQLite: in
the process; PostgreSQL: one statement over an asyncio connection). A reservation and a
denial are committed before the call goes on. The settlement is committed
before the answer by default; the gateway (`settle_before_answer=False`)
answers first and lets it commit in the same loop turn: the answer's
`cost_usd` is the same min(cost, cap), the budget stays safe meanwhile
(the reservation holds the cap, and a settlement only gives back), and a
crash between the two leaves a reservation that expires, as a crash just
before the settlement would. An expired reservation is charged in full
(records._ledger): nothing durable says whether its agent was called or its
answer sent, so a crash costs a caller at most the cap of each call in
flight and never lets the budget pay for more answers than it holds. A call
stopped mid-way (a cancelled request) is charged the same way; one the
executor refused before sending anything is released at zero. `drain()`
waits for writes still queued (the server calls it at shutdown and before
reading the ledger).

Every call is held to its capability's contract (gateway.live._contract):
an input outside the input schema is refused before the decision (400
`invalid_input`, a deny row, no reservation, no agent call); an output
outside the output schema is the agent's 502 `invalid_output`, settled at
zero and counted against it (records._conformance).

An answer is at most `max_response_bytes` (4 MiB, the cap on an agent's
body too): the executor takes an output only while, written as holon
writes JSON, it leaves `ANSWER_ENVELOPE_BYTES` of that for the rest of the
answer; a bigger one is the agent's `invalid_response` (502), never a
partial or oversized answer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, TypeVar

from anyio import to_thread
from opentelemetry.context import Context
from opentelemetry.trace import Tracer

from agents import (
    DEFAULT_MAX_RESPONSE_BYTES,
    CallLimits,
    Executor,
    Manifest,
    Outcome,
)
from agents import request_id as new_request_id
from evals.suites import Contract
from gateway._tracing import span
from gateway.live._cache import CacheMiss, Lookups
from gateway.live._contract import check_input, check_output, invalid_input, invalid_output
from gateway.live._decision import check_mandate, denial_error
from gateway.live._writes import LedgerWriter, charge_of, release_of
from gateway.mandates import Decision, Mandate, decide_all
from records import (
    INVALID_INPUT,
    INVALID_OUTPUT,
    AgentInfo,
    BudgetState,
    CallEntry,
    Deny,
    LedgerEntry,
    RateState,
    Reserve,
    Settle,
    Store,
    utcnow,
)
from schema.errors import (
    AgentCallFailed,
    AgentTimedOut,
    Denied,
    HolonError,
    InputError,
    NotFound,
)
from schema.jsontext import JSONValue

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["ANSWER_ENVELOPE_BYTES", "Allowed", "CallableAgent", "LiveCalls"]

DEFAULT_DEADLINE_S = Decimal(30)
# A reservation outlives its call's deadline by this much before it counts as
# left behind by a crash (a settling call may be a little late).
RESERVATION_GRACE = timedelta(seconds=60)
MAX_ROUTE_ATTEMPTS = 3
# What an answer holds besides the output: ids, versions and money of bounded
# length (schema patterns, 40-character costs) and at most three routing
# entries, well under 2 KiB.
ANSWER_ENVELOPE_BYTES = 16 * 1024


@dataclass(frozen=True)
class Allowed:
    """A call that may go ahead: its reservation, its mandate and what to call."""

    manifest: Manifest
    mandate: Mandate
    entry: LedgerEntry
    secret: str | None


@dataclass(frozen=True)
class CallableAgent:
    """An agent a caller's mandates allow for a capability now (`LiveCalls.callable_agents`):
    its record's eval score and the certificate the allowing mandate accepted, if any."""

    agent: AgentInfo
    eval_score: Decimal | None
    certificate_id: str | None


@dataclass(frozen=True)
class _Decided:
    """The decision before any budget: who may pay, in order, and what to call."""

    call: CallEntry
    manifest: Manifest
    mandates: dict[str, Mandate]
    decisions: list[Decision]
    secret: str | None
    now: datetime
    revisions: dict[str, int] = field(default_factory=dict)  # mandate id -> revision decided on
    record_eval_id: str | None = None  # the eval of the record decided on (None: none read)


class LiveCalls:
    def __init__(
        self,
        store: Store,
        executor: Executor,
        *,
        lookups: Lookups | None = None,
        clock: Callable[[], datetime] = utcnow,
        settle_before_answer: bool = True,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        observe: Callable[[LedgerEntry], None] | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        """`observe`: sees every ledger row these calls commit (the gateway's metrics).
        `tracer`: spans of each call (live.call: decide, reserve, call, settle); None
        makes none (gateway._tracing)."""
        if max_response_bytes <= ANSWER_ENVELOPE_BYTES:
            raise ValueError(f"max_response_bytes must be over {ANSWER_ENVELOPE_BYTES}")
        self.store = store
        self.executor = executor
        self.lookups = lookups or Lookups(store)
        self.clock = clock
        self.settle_before_answer = settle_before_answer
        self.max_response_bytes = max_response_bytes
        self.observe = observe
        self.tracer = tracer
        self.writer = LedgerWriter(store, observe=observe)

    async def drain(self) -> None:
        """Wait for every ledger write queued so far (settlements after their answers)."""
        await self.writer.drain()

    # -- the public calls ---------------------------------------------------

    async def invoke(
        self,
        caller: str,
        agent_id: str,
        capability: str,
        input: JSONValue,
        *,
        parent: Context | None = None,
    ) -> dict[str, Any]:
        """Call `agent_id` for `caller`; the response body, or a HolonError (denied, failed).

        `parent`: the caller's trace (gateway._tracing.caller_context), continued."""
        with span(self.tracer, "live.call", context=parent) as current:
            if current is not None:
                current.set_attributes(
                    {
                        "holon.caller": caller,
                        "holon.agent": agent_id,
                        "holon.capability": capability,
                    }
                )
            request_id = new_request_id()
            contract = await self._contract(capability)
            await self._refuse_bad_input(caller, agent_id, capability, input, contract, request_id)
            allowed = await self._decide_and_reserve(caller, agent_id, capability, request_id)
            outcome = await self._call(allowed, capability, input, request_id, contract)
            return await self._finish(allowed, outcome, contract)

    async def route(
        self, caller: str, capability: str, input: JSONValue, *, parent: Context | None = None
    ) -> dict[str, Any]:
        """Call the best agent the caller's mandates allow for `capability` (GATEWAY.md, routing).

        Best: highest eval_score, then lowest per-call price, then id. An
        `unreachable` agent (it never saw the request) falls back to the next
        candidate, whose mandates are decided again.
        """
        with span(self.tracer, "live.call", context=parent) as current:
            if current is not None:
                current.set_attributes(
                    {"holon.caller": caller, "holon.capability": capability, "holon.routed": True}
                )
            return await self._route(caller, capability, input)

    async def _route(self, caller: str, capability: str, input: JSONValue) -> dict[str, Any]:
        contract = await self._contract(capability)
        await self._refuse_bad_input(caller, None, capability, input, contract, new_request_id())
        candidates = await to_thread.run_sync(self._candidates, caller, capability)
        tried: list[dict[str, Any]] = []
        last: Exception | None = None
        for agent_id in candidates[:MAX_ROUTE_ATTEMPTS]:
            request_id = new_request_id()
            try:
                allowed = await self._decide_and_reserve(caller, agent_id, capability, request_id)
            except Denied as exc:  # e.g. its budget ran out since ranking
                tried.append({"agent": agent_id, "decision": "deny", "reason": exc.code})
                last = exc
                continue
            outcome = await self._call(allowed, capability, input, request_id, contract)
            if outcome.code == "unreachable" and agent_id != candidates[-1]:
                await self.writer.write(_settlement(allowed, outcome))
                tried.append({"agent": agent_id, "outcome": "unreachable"})
                continue
            body = await self._finish(allowed, outcome, contract)
            body["routing"] = {"candidates": len(candidates), "tried": tried}
            return body
        if last is not None:
            raise last
        raise AgentCallFailed(  # every candidate was unreachable
            f"no agent for {capability} could be reached",
            code="unreachable",
            details={"capability": capability, "tried": tried},
        )

    async def contract(self, capability: str) -> Contract | None:
        """The capability's contract (None: no suite certifies it), read as a live call
        reads it: from the lookup cache on the loop, else in a worker thread."""
        return await self._contract(capability)

    def check(self, mandate_id: str, agent_id: str, capability: str) -> dict[str, Any]:
        """A dry run of one mandate's decision (no ledger row, nothing reserved)."""
        return check_mandate(self.lookups, mandate_id, agent_id, capability, self.clock())

    # -- steps -------------------------------------------------------------

    async def _contract(self, capability: str) -> Contract | None:
        try:
            return self.lookups.cached_only().contract(capability)
        except CacheMiss:
            return await to_thread.run_sync(self.lookups.contract, capability)

    async def _refuse_bad_input(
        self,
        caller: str,
        agent_id: str | None,
        capability: str,
        input: JSONValue,
        contract: Contract | None,
        request_id: str,
    ) -> None:
        """Before any decision: an input outside the contract is the caller's 400, with a
        ledger row (deny, nothing reserved) and no agent call (gateway.live._contract)."""
        violation = await check_input(contract, input)
        if violation is None:
            return
        assert contract is not None
        version = None
        if agent_id is not None:
            try:
                agent = _callable(self.lookups.cached_only(), agent_id, capability)
            except CacheMiss:
                agent = await to_thread.run_sync(_callable, self.lookups, agent_id, capability)
            version = agent.version
        error = invalid_input(
            contract, violation, f"{caller} calling {agent_id or 'any agent'} for {capability}"
        )
        await self.writer.write(
            Deny(
                CallEntry(request_id, caller, capability, agent_id, version),
                mandate_id=None,
                reason=INVALID_INPUT,
                details=error.details,
            )
        )
        raise error

    async def _decide_and_reserve(
        self, caller: str, agent_id: str, capability: str, request_id: str
    ) -> Allowed:
        with span(self.tracer, "decide"):
            try:
                decided = self._decide(self.lookups.cached_only(), caller, agent_id, capability)
            except CacheMiss:
                decided = await to_thread.run_sync(
                    self._decide, self.lookups, caller, agent_id, capability
                )
        with span(self.tracer, "reserve") as current:
            allowed = await self._reserve(decided, caller, agent_id, capability, request_id)
            if current is not None:
                current.set_attribute("holon.mandate", allowed.mandate.id)
            return allowed

    async def _reserve(
        self, decided: _Decided, caller: str, agent_id: str, capability: str, request_id: str
    ) -> Allowed:
        """Reserve under the first mandate that allows and has budget; else the denial."""
        decided = _Decided(  # not dataclasses.replace: this is every call's path
            _replace_request(decided.call, request_id),
            decided.manifest,
            decided.mandates,
            decided.decisions,
            decided.secret,
            decided.now,
            decided.revisions,
            decided.record_eval_id,
        )
        decisions = decided.decisions
        for index, decision in enumerate(decisions):
            if not decision.allow:
                continue
            mandate = decided.mandates[decision.mandate]
            deadline = _deadline(mandate, decided.manifest)
            reserved = await self.writer.reserve(
                Reserve(
                    decided.call,
                    mandate_id=mandate.id,
                    cap=mandate.max_cost_per_call_usd,
                    expires_at=decided.now + timedelta(seconds=float(deadline)) + RESERVATION_GRACE,
                    budget=None
                    if mandate.budget is None
                    else (mandate.budget.period, mandate.budget.amount_usd),
                    details={"decision": decision.to_json()},
                    mandate_revision=decided.revisions.get(mandate.id),
                    record_eval_id=decided.record_eval_id,
                    certificate_id=decision.certificate_id,
                    rate_limit=mandate.rate_limit,
                )
            )
            if isinstance(reserved, BudgetState):
                decisions[index] = Decision(
                    mandate.id, False, "budget_exhausted", reserved.to_json()
                )
                continue
            if isinstance(reserved, RateState):
                decisions[index] = Decision(mandate.id, False, "rate_limited", reserved.to_json())
                continue
            return Allowed(decided.manifest, mandate, reserved, decided.secret)
        error = denial_error(decisions, subject=f"{caller} calling {agent_id} for {capability}")
        denied_by = error.details.get("mandate")
        await self.writer.write(
            Deny(
                decided.call,
                mandate_id=denied_by,
                reason=error.code,
                details={"mandates": error.details["mandates"]},
                mandate_revision=None if denied_by is None else decided.revisions.get(denied_by),
                record_eval_id=decided.record_eval_id,
            )
        )
        raise error

    def _decide(self, lookups: Lookups, caller: str, agent_id: str, capability: str) -> _Decided:
        """Every mandate's decision; raises CacheMiss on a `cached_only` view that lacks a read."""
        agent = _callable(lookups, agent_id, capability)
        held = lookups.held_mandates(caller)
        mandates = held.mandates
        record = None
        if any(m.needs_record for m in mandates):
            record = lookups.record(agent.id, agent.version)
        live = None
        if any(m.needs_live for m in mandates):
            live = lookups.live(agent.id, capability)
        secret = lookups.secret(agent.id)
        manifest = lookups.manifest(agent.id, agent.version, agent.manifest)
        now = self.clock()
        decisions = decide_all(
            mandates,
            agent_id=agent.id,
            agent_version=agent.version,
            capability=capability,
            record=record,
            now=now,
            live=live,
            not_advertised=lookups.not_advertised(agent.id, agent.version),
            imported=lookups.imported(agent.id, agent.version, agent.manifest, mandates),
        )
        call = CallEntry("", caller, capability, agent.id, agent.version)
        return _Decided(
            call,
            manifest,
            {m.id: m for m in mandates},
            decisions,
            secret,
            now,
            held.revisions,
            None if record is None else record.eval_id,
        )

    async def _call(
        self,
        allowed: Allowed,
        capability: str,
        input: JSONValue,
        request_id: str,
        contract: Contract | None,
    ) -> Outcome:
        limits = CallLimits(
            max_cost_usd=allowed.mandate.max_cost_per_call_usd,
            timeout_s=allowed.mandate.timeout_s,
            max_response_bytes=self.max_response_bytes,
            max_output_bytes=self.max_response_bytes - ANSWER_ENVELOPE_BYTES,
        )
        try:
            # The agent's traceparent is this span's (agents._trace).
            with span(self.tracer, "call") as current:
                outcome = await self.executor.execute(
                    allowed.manifest,
                    capability,
                    input,
                    limits,
                    secret=allowed.secret,
                    request_id=request_id,
                    # What the answer is checked against, as an eval cell asks for it.
                    output_schema=None if contract is None else contract.output_schema,
                )
                if current is not None:
                    current.set_attributes(
                        {"holon.outcome": outcome.code, "holon.request_id": outcome.request_id}
                    )
                return outcome
        except HolonError:
            # Our own side, raised before anything is sent (a policy refusal such
            # as the agent's address, a caller bug): the agent was not called.
            await self.writer.write(release_of(allowed.entry))
            raise
        except BaseException:
            # Stopped mid-call (the gateway shutting down cancels it) or a bug: the
            # agent may have been called and its outcome is unknown, so the call is
            # charged what it reserved, as an expired reservation is.
            self.writer.later(charge_of(allowed.entry))
            raise

    async def _finish(
        self, allowed: Allowed, outcome: Outcome, contract: Contract | None = None
    ) -> dict[str, Any]:
        # An answer outside the contract is never passed on, and costs the caller nothing.
        violation = None
        if outcome.ok:
            violation = await check_output(contract, outcome.output, outcome.output_bytes)
        settlement = _settlement(allowed, outcome)
        if violation is not None:
            settlement = Settle(
                allowed.entry.id, INVALID_OUTPUT, Decimal(0), "none", outcome.latency_ms
            )
        with span(self.tracer, "settle") as current:
            if self.settle_before_answer:
                settled: LedgerEntry = await self.writer.write(settlement)
                cost = settled.cost_usd
            else:  # queued: it commits in this loop turn, after the answer
                self.writer.later(settlement)
                cost = min(settlement.cost, allowed.entry.reserved_usd)  # what it charges
            if current is not None:
                current.set_attribute("holon.cost_usd", str(cost))
        manifest = allowed.manifest
        failed = {
            "agent": manifest.id,
            "agent_version": manifest.version,
            "request_id": outcome.request_id,
            "http_status": outcome.http_status,
            "cost_usd": str(cost),
            "mandate": allowed.mandate.id,
        }
        if violation is not None:
            assert contract is not None
            raise invalid_output(contract, violation, f"{manifest.id} {manifest.version}", failed)
        if outcome.code != "ok":
            cls = AgentTimedOut if outcome.code == "timeout" else AgentCallFailed
            raise cls(
                f"{manifest.id} {manifest.version}: {outcome.code}"
                + (f": {outcome.error}" if outcome.error else ""),
                code=outcome.code,
                details=failed,
            )
        return {
            "output": outcome.output,
            "usage": None if outcome.usage is None else outcome.usage.to_json(),
            "cost_usd": str(cost),
            "cost_source": outcome.cost_source,
            "agent": manifest.id,
            "agent_version": manifest.version,
            "mandate": allowed.mandate.id,
            "request_id": outcome.request_id,
            "latency_ms": round(outcome.latency_ms, 3),
        }

    def callable_agents(self, caller: str, capability: str) -> list[CallableAgent]:
        """The agents claiming `capability` that some mandate of `caller` allows now, best
        first, as routing ranks them: a read (no ledger row), for a front door's listing.
        Blocking (the store): run it in a worker thread."""
        agents = self.lookups.agents_claiming(capability)
        return self._ranked(caller, capability, agents)[0] if agents else []

    def _candidates(self, caller: str, capability: str) -> list[str]:
        """Agents claiming `capability` that some mandate of `caller` allows now, best first."""
        agents = self.lookups.agents_claiming(capability)
        if not agents:
            raise NotFound(
                f"no enabled agent claims {capability}", details={"capability": capability}
            )
        ranked, decisions = self._ranked(caller, capability, agents)
        if not ranked:
            held = self.lookups.held_mandates(caller)
            error = denial_error(decisions, subject=f"{caller} calling any agent for {capability}")
            call = CallEntry(new_request_id(), caller, capability, None, None)
            denied_by = error.details.get("mandate")
            denied = self.store.ledger.deny(
                call,
                mandate_id=denied_by,
                reason=error.code,
                details={"mandates": error.details["mandates"]},
                mandate_revision=None if denied_by is None else held.revisions.get(denied_by),
            )
            if self.observe is not None:
                self.observe(denied)
            raise error
        return [found.agent.id for found in ranked]

    def _ranked(
        self, caller: str, capability: str, agents: list[AgentInfo]
    ) -> tuple[list[CallableAgent], list[Decision]]:
        """The allowed `agents`, best first, and every mandate's denial of the others."""
        held = self.lookups.held_mandates(caller)
        mandates = held.mandates
        now = self.clock()
        ranked: list[tuple[Decimal, Decimal, str, CallableAgent]] = []
        decisions: list[Decision] = []
        live_needed = any(m.needs_live for m in mandates)
        for agent in agents:
            record = self.lookups.record(agent.id, agent.version)
            mine = decide_all(
                mandates,
                agent_id=agent.id,
                agent_version=agent.version,
                capability=capability,
                record=record,
                now=now,
                live=self.lookups.live(agent.id, capability) if live_needed else None,
                not_advertised=self.lookups.not_advertised(agent.id, agent.version),
                imported=self.lookups.imported(agent.id, agent.version, agent.manifest, mandates),
            )
            allowing = next((v for v in mine if v.allow), None)
            if allowing is not None:
                score = Decimal(0) if record is None else record.eval_score or Decimal(0)
                price = Decimal(str(agent.manifest.get("pricing", {}).get("per_call_usd", "0")))
                found = CallableAgent(
                    agent,
                    None if record is None else record.eval_score,
                    allowing.certificate_id,
                )
                ranked.append((-score, price, agent.id, found))
            else:
                decisions += [
                    Decision(v.mandate, False, v.reason, {**v.numbers, "agent": agent.id})
                    for v in mine
                ]
        ranked.sort(key=lambda item: item[:3])
        return [item[3] for item in ranked], decisions


def _settlement(allowed: Allowed, outcome: Outcome) -> Settle:
    return Settle(
        allowed.entry.id, outcome.code, outcome.cost_usd, outcome.cost_source, outcome.latency_ms
    )


def _callable(lookups: Lookups, agent_id: str, capability: str) -> AgentInfo:
    """The agent, if it may be called for `capability` at all (enabled, claiming it)."""
    agent = lookups.agent(agent_id)
    if agent.disabled:
        raise NotFound(f"agent {agent_id} is disabled", details={"agent": agent_id})
    if capability not in agent.capabilities:
        raise InputError(
            f"{agent_id} does not claim the capability {capability!r}",
            code="capability_not_claimed",
            details={"agent": agent_id, "capabilities": agent.capabilities},
        )
    return agent


def _replace_request(call: CallEntry, request_id: str) -> CallEntry:
    return CallEntry(request_id, call.caller, call.capability, call.agent_id, call.agent_version)


def _deadline(mandate: Mandate, manifest: Manifest) -> Decimal:
    if mandate.timeout_s is not None:
        return mandate.timeout_s
    if manifest.limits.timeout_s is not None:
        return manifest.limits.timeout_s
    return DEFAULT_DEADLINE_S
