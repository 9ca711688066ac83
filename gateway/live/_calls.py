"""Live calls under mandates (docs/gateway.md, "Live calls"): decide, reserve, call, settle.

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
an input outside the input schema is refused after the mandates' decision
and before the reservation (400 `invalid_input`, a deny row, no
reservation, no agent call); an output outside the output schema is the
agent's 502 `invalid_output`, settled at zero and counted against it
(records._conformance).

The order of refusals (docs/gateway.md, "The order of refusals"): first what
needs no input (the agent may be called, the mandates allow the caller to
call it for the capability), then the input against the contract, then the
reservation (budget, rate limit). A caller no mandate lets call the
capability learns nothing of its schema; an input outside the contract
never reaches the agent and never reserves money or takes a token.

One ledger row per call: a denial is written once, whatever routing tried
(the candidates passed over are in its details, and in the details of the
reservation of the one that was called). An agent called and found
`unreachable` keeps its own reservation row, settled at zero: it took a
rate-limit token and held the budget, and the ledger accounts for both.

An answer is at most `max_response_bytes` (4 MiB, the cap on an agent's
body too): the executor takes an output only while, written as holon
writes JSON, it leaves `ANSWER_ENVELOPE_BYTES` of that for the rest of the
answer; a bigger one is the agent's `invalid_response` (502), never a
partial or oversized answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
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
from gateway.live._canaries import Canaries
from gateway.live._contract import check_input, check_output, invalid_input, invalid_output
from gateway.live._decision import (
    Decided,
    check_mandate,
    decide_call,
    denial_error,
    refusal,
)
from gateway.live._routing import CallableAgent, rank
from gateway.live._writes import LedgerWriter, charge_of, release_of
from gateway.mandates import Decision, Mandate
from records import (
    INVALID_INPUT,
    INVALID_OUTPUT,
    CallEntry,
    Deny,
    LedgerEntry,
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
    NotFound,
)
from schema.jsontext import JSONValue

log = logging.getLogger(__name__)

T = TypeVar("T")

__all__ = ["ANSWER_ENVELOPE_BYTES", "Allowed", "LiveCalls", "Started"]

DEFAULT_DEADLINE_S = Decimal(30)
# A reservation outlives its call's deadline by this much before it counts as
# left behind by a crash (a settling call may be a little late).
RESERVATION_GRACE = timedelta(seconds=60)
MAX_ROUTE_ATTEMPTS = 3
# What an answer holds besides the output: ids, versions and money of bounded
# length (schema patterns, 40-character costs) and at most three routing
# entries, well under 2 KiB.
ANSWER_ENVELOPE_BYTES = 16 * 1024
# Told (agent id, request id) when a call goes to its agent (LiveCalls.invoke).
Started = Callable[[str, str], None]


@dataclass(frozen=True)
class Allowed:
    """A call that may go ahead: its reservation, its mandate and what to call."""

    manifest: Manifest
    mandate: Mandate
    entry: LedgerEntry
    secret: str | None


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
        # The gateway's canaries (gateway.live._canaries), nudged by each call that
        # reached an agent; None: none are sent.
        self.canaries: Canaries | None = None
        self._graders: set[asyncio.Task[None]] = set()  # live checks still being graded

    async def drain(self) -> None:
        """Wait for every ledger write queued so far (settlements after their answers), and
        the live checks of answers sent."""
        await self.writer.drain()
        if self._graders:
            await asyncio.gather(*self._graders, return_exceptions=True)

    # -- the public calls ---------------------------------------------------

    async def invoke(
        self,
        caller: str,
        agent_id: str,
        capability: str,
        input: JSONValue,
        *,
        parent: Context | None = None,
        started: Started | None = None,
    ) -> dict[str, Any]:
        """Call `agent_id` for `caller`; the response body, or a HolonError (denied, failed).

        `parent`: the caller's trace (gateway._tracing.caller_context), continued.
        `started`: told (agent id, request id) once the call is allowed and reserved, just
        before the agent is called: what a streaming door waits for before it answers
        200 (every refusal before it is an error status of its own)."""
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
            decided = await self._decide(caller, agent_id, capability)
            if not decided.allowed:  # before the input is read: its schema is not the caller's
                with span(self.tracer, "reserve"):  # the denial's row, where a reservation goes
                    raise await self._deny(decided.call, request_id, decided, _denial(decided))
            await self._refuse_bad_input(decided.call, input, contract, request_id)
            with span(self.tracer, "reserve") as current:
                allowed = await self._reserve(decided, request_id)
                if isinstance(allowed, Denied):
                    raise await self._deny(decided.call, request_id, decided, allowed)
                if current is not None:
                    current.set_attribute("holon.mandate", allowed.mandate.id)
            outcome = await self._call(allowed, capability, input, request_id, contract, started)
            return await self._finish(allowed, outcome, contract, input)

    async def route(
        self,
        caller: str,
        capability: str,
        input: JSONValue,
        *,
        parent: Context | None = None,
        started: Started | None = None,
    ) -> dict[str, Any]:
        """Call the best agent the caller's mandates allow for `capability` (docs/gateway.md).

        Best: highest eval_score, then lowest per-call price, then id. An
        `unreachable` agent (it never saw the request) falls back to the next
        candidate, whose mandates are decided again, and so does a candidate whose
        mandates' budgets or rate limits refuse it now. One ledger row for the call
        (the module doc), plus the reservation of each agent found unreachable.
        `started`: as `invoke`'s, told of each agent tried.
        """
        with span(self.tracer, "live.call", context=parent) as current:
            if current is not None:
                current.set_attributes(
                    {"holon.caller": caller, "holon.capability": capability, "holon.routed": True}
                )
            return await self._route(caller, capability, input, started)

    async def _route(
        self, caller: str, capability: str, input: JSONValue, started: Started | None
    ) -> dict[str, Any]:
        request_id = new_request_id()  # the call's row (an unreachable agent's has its own)
        contract = await self._contract(capability)
        candidates = await to_thread.run_sync(self._candidates, caller, capability, request_id)
        # A routed refusal has no agent: none was chosen yet.
        await self._refuse_bad_input(
            CallEntry(request_id, caller, capability, None, None), input, contract, request_id
        )
        tried: list[dict[str, Any]] = []  # the answer's `routing.tried`
        passed: list[dict[str, Any]] = []  # the same, as the ledger row's details keep them
        denials: list[Decision] = []  # every passed-over candidate's mandates, by agent
        decided_for: dict[str, Decided] = {}
        for agent_id in candidates[:MAX_ROUTE_ATTEMPTS]:
            decided = await self._decide(caller, agent_id, capability)
            decided_for[agent_id] = decided
            with span(self.tracer, "reserve") as current:
                result: Allowed | Denied
                if decided.allowed:
                    result = await self._reserve(decided, request_id, passed_over=list(passed))
                else:
                    result = _denial(decided)
                if current is not None and isinstance(result, Allowed):
                    current.set_attribute("holon.mandate", result.mandate.id)
            if isinstance(result, Denied):  # e.g. its budget ran out since ranking
                entry = {"agent": agent_id, "decision": "deny", "reason": result.code}
                tried.append(entry)
                passed.append({**entry, "mandate": result.details.get("mandate")})
                denials += [
                    Decision(v.mandate, False, v.reason, {**v.numbers, "agent": agent_id})
                    for v in decided.decisions
                ]
                continue
            allowed = result
            outcome = await self._call(allowed, capability, input, request_id, contract, started)
            if outcome.code == "unreachable" and agent_id != candidates[-1]:
                await self.writer.write(_settlement(allowed, outcome))
                tried.append({"agent": agent_id, "outcome": "unreachable"})
                passed.append(
                    {"agent": agent_id, "outcome": "unreachable", "request_id": request_id}
                )
                request_id = new_request_id()  # that row keeps its id; the next attempt's own
                continue
            body = await self._finish(allowed, outcome, contract, input)
            body["routing"] = {"candidates": len(candidates), "tried": tried}
            return body
        if denials:
            # One row for every candidate denied: the reason of the mandate that got
            # furthest over all of them (its revision, the record it read), and each
            # candidate passed over and why.
            error = denial_error(denials, subject=f"{caller} calling any agent for {capability}")
            call = CallEntry(request_id, caller, capability, None, None)
            furthest = decided_for[str(error.details["agent"])]
            raise await self._deny(call, request_id, furthest, error, candidates=passed)
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
        call: CallEntry,
        input: JSONValue,
        contract: Contract | None,
        request_id: str,
    ) -> None:
        """After the decision, before the reservation: an input outside the contract is the
        caller's 400, with a ledger row (deny, nothing reserved) and no agent call
        (gateway.live._contract)."""
        violation = await check_input(contract, input)
        if violation is None:
            return
        assert contract is not None
        error = invalid_input(
            contract,
            violation,
            f"{call.caller} calling {call.agent_id or 'any agent'} for {call.capability}",
        )
        await self.writer.write(
            Deny(
                _replace_request(call, request_id),
                mandate_id=None,
                reason=INVALID_INPUT,
                details=error.details,
            )
        )
        raise error

    async def _decide(self, caller: str, agent_id: str, capability: str) -> Decided:
        """Every mandate's decision (gateway.live._decision.decide_call): on the loop when
        the lookup cache holds every read, else in a worker thread."""
        with span(self.tracer, "decide"):
            try:
                return self._decide_now(self.lookups.cached_only(), caller, agent_id, capability)
            except CacheMiss:
                return await to_thread.run_sync(
                    self._decide_now, self.lookups, caller, agent_id, capability
                )

    def _decide_now(self, lookups: Lookups, caller: str, agent_id: str, capability: str) -> Decided:
        held = lookups.held_mandates(caller)
        return decide_call(lookups, held, caller, agent_id, capability, self.clock())

    async def _reserve(
        self,
        decided: Decided,
        request_id: str,
        *,
        passed_over: list[dict[str, Any]] | None = None,
    ) -> Allowed | Denied:
        """Reserve under the first mandate that allows and has budget; else the denial (its
        row not written: `_deny`). `passed_over`: the candidates routing passed over, kept in
        the reservation's details."""
        call = _replace_request(decided.call, request_id)
        decisions = decided.decisions  # a refused reservation is its mandate's denial now
        for index, decision in enumerate(decisions):
            if not decision.allow:
                continue
            mandate = decided.mandates[decision.mandate]
            deadline = _deadline(mandate, decided.manifest)
            details: dict[str, Any] = {"decision": decision.to_json()}
            if passed_over:
                details["passed_over"] = passed_over
            reserved = await self.writer.reserve(
                Reserve(
                    call,
                    mandate_id=mandate.id,
                    cap=mandate.max_cost_per_call_usd,
                    expires_at=decided.now + timedelta(seconds=float(deadline)) + RESERVATION_GRACE,
                    budget=None
                    if mandate.budget is None
                    else (mandate.budget.period, mandate.budget.amount_usd),
                    details=details,
                    mandate_revision=decided.revisions.get(mandate.id),
                    record_eval_id=decided.record_eval_id,
                    certificate_id=decision.certificate_id,
                    rate_limit=mandate.rate_limit,
                )
            )
            if not isinstance(reserved, LedgerEntry):
                decisions[index] = refusal(mandate.id, reserved)
                continue
            return Allowed(decided.manifest, mandate, reserved, decided.secret)
        return denial_error(decisions, subject=_subject(decided.call))

    async def _deny(
        self,
        call: CallEntry,
        request_id: str,
        decided: Decided,
        error: Denied,
        *,
        candidates: list[dict[str, Any]] | None = None,
    ) -> Denied:
        """Write the call's one deny row for `error`; the error, to raise."""
        denied_by = error.details.get("mandate")
        details: dict[str, Any] = {"mandates": error.details["mandates"]}
        if candidates is not None:
            details["candidates"] = candidates
        await self.writer.write(
            Deny(
                _replace_request(call, request_id),
                mandate_id=denied_by,
                reason=error.code,
                details=details,
                mandate_revision=None if denied_by is None else decided.revisions.get(denied_by),
                record_eval_id=decided.record_eval_id,
            )
        )
        return error

    async def _call(
        self,
        allowed: Allowed,
        capability: str,
        input: JSONValue,
        request_id: str,
        contract: Contract | None,
        started: Started | None = None,
    ) -> Outcome:
        if started is not None:
            started(allowed.manifest.id, request_id)
        limits = CallLimits(
            max_cost_usd=allowed.mandate.max_cost_per_call_usd,
            timeout_s=allowed.mandate.timeout_s,
            max_response_bytes=self.max_response_bytes,
            max_output_bytes=self.max_response_bytes - ANSWER_ENVELOPE_BYTES,
        )
        try:
            # The agent's traceparent is its attempt's span's, a child of this one
            # (agents._trace): a retry carries a parent id of its own, as in an eval.
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
                    tracer=self.tracer,
                )
                if current is not None:
                    current.set_attributes(
                        {"holon.outcome": outcome.code, "holon.request_id": outcome.request_id}
                    )
            if self.canaries is not None:  # maybe a canary to it, among its live calls
                self.canaries.nudge(allowed.manifest.id, capability)
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

    def _grade_later(
        self, agent_id: str, contract: Contract, input: JSONValue, output: JSONValue
    ) -> None:
        """Grade an answer by the suite's reference-free checks after it is sent, off the
        loop; each failing answer is counted in live conformance (`check_failures`)."""

        def grade_and_count() -> None:
            failed = contract.live_check_failures(input, output)
            if failed:
                self.store.conformance.check_failed(agent_id, contract.capability)

        async def later() -> None:
            try:
                await to_thread.run_sync(grade_and_count)
            except Exception:  # one answer's grading never fails the calls that follow
                log.exception("live checks of an answer of %s not counted", agent_id)

        task = asyncio.get_running_loop().create_task(later())
        self._graders.add(task)
        task.add_done_callback(self._graders.discard)

    async def _finish(
        self,
        allowed: Allowed,
        outcome: Outcome,
        contract: Contract | None = None,
        input: JSONValue = None,
    ) -> dict[str, Any]:
        # An answer outside the contract is never passed on, and costs the caller nothing.
        violation = None
        if outcome.ok:
            violation = await check_output(contract, outcome.output, outcome.output_bytes)
            if violation is None and contract is not None and contract.live_checks:
                self._grade_later(allowed.manifest.id, contract, input, outcome.output)
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
        return rank(self.lookups, caller, capability, agents, self.clock())[0] if agents else []

    def _candidates(self, caller: str, capability: str, request_id: str) -> list[str]:
        """Agents claiming `capability` that some mandate of `caller` allows now, best first."""
        agents = self.lookups.agents_claiming(capability)
        if not agents:
            raise NotFound(
                f"no enabled agent claims {capability}", details={"capability": capability}
            )
        ranked, decisions = rank(self.lookups, caller, capability, agents, self.clock())
        if not ranked:
            error = denial_error(decisions, subject=f"{caller} calling any agent for {capability}")
            call = CallEntry(request_id, caller, capability, None, None)
            denied_by = error.details.get("mandate")
            revisions = self.lookups.held_mandates(caller).revisions
            denied = self.store.ledger.deny(
                call,
                mandate_id=denied_by,
                reason=error.code,
                details={"mandates": error.details["mandates"]},
                mandate_revision=None if denied_by is None else revisions.get(denied_by),
            )
            if self.observe is not None:
                self.observe(denied)
            raise error
        return [found.agent.id for found in ranked]


def _settlement(allowed: Allowed, outcome: Outcome) -> Settle:
    return Settle(
        allowed.entry.id, outcome.code, outcome.cost_usd, outcome.cost_source, outcome.latency_ms
    )


def _subject(call: CallEntry) -> str:
    return f"{call.caller} calling {call.agent_id} for {call.capability}"


def _denial(decided: Decided) -> Denied:
    """The error of a call its mandates deny before any reservation."""
    return denial_error(decided.decisions, subject=_subject(decided.call))


def _replace_request(call: CallEntry, request_id: str) -> CallEntry:
    return CallEntry(request_id, call.caller, call.capability, call.agent_id, call.agent_version)


def _deadline(mandate: Mandate, manifest: Manifest) -> Decimal:
    if mandate.timeout_s is not None:
        return mandate.timeout_s
    if manifest.limits.timeout_s is not None:
        return manifest.limits.timeout_s
    return DEFAULT_DEADLINE_S
