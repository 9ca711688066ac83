"""The decision on a live call, and its dry run (`holon mandates check`), made by one code.

`decide_call` reads what the caller's mandates need (the agent, the record,
the live conformance, the identity probe, imported records) and decides
each mandate (gateway.mandates): a live call decides with it before its
input is read, and the check with it on the one mandate asked about.
`refusal` turns the ledger's refusal of a reservation (the budget's, the
rate limit's) into that mandate's denial: a live call with what its
reservation was answered, the check with what the ledger judges a
reservation would be answered now (`LedgerRegistry.judge`, the same
judgements, read without a lock). `denial_error` names the mandate that got
furthest. So a check can only differ from the live call that follows it by
what changed in between (another call's reservation, the one-second cache).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any

from agents import Manifest
from gateway.live._cache import HeldMandates, Lookups
from gateway.mandates import Decision, Mandate, decide_one
from records import AgentInfo, AgentRecord, BudgetState, CallEntry, RateState, period_key, utc_text
from schema.errors import BudgetExhausted, Denied, InputError, NotFound, RateLimited

__all__ = [
    "Decided",
    "callable_agent",
    "check_mandate",
    "decide_agent",
    "decide_call",
    "denial_error",
    "refusal",
]


@dataclass(frozen=True)
class Decided:
    """The decision before any budget: who may pay, in order, and what to call."""

    call: CallEntry
    manifest: Manifest
    mandates: dict[str, Mandate]
    decisions: list[Decision]
    secret: str | None
    now: datetime
    revisions: dict[str, int] = field(default_factory=dict)  # mandate id -> revision decided on
    record_eval_id: str | None = None  # the eval of the record decided on (None: none read)

    @property
    def allowed(self) -> bool:
        return any(d.allow for d in self.decisions)


def callable_agent(lookups: Lookups, agent_id: str, capability: str) -> AgentInfo:
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


def decide_call(
    lookups: Lookups,
    held: HeldMandates,
    caller: str,
    agent_id: str,
    capability: str,
    now: datetime,
) -> Decided:
    """Each of `held`'s decisions on `caller` calling `agent_id` for `capability` at `now`;
    raises CacheMiss on a `cached_only` view that lacks a read."""
    agent = callable_agent(lookups, agent_id, capability)
    mandates = held.mandates
    record = None
    if any(m.needs_record for m in mandates):
        record = lookups.record(agent.id, agent.version)
    secret = lookups.secret(agent.id)
    manifest = lookups.manifest(agent.id, agent.version, agent.manifest)
    decisions = decide_agent(lookups, mandates, agent, capability, now, record=record)
    return Decided(
        CallEntry("", caller, capability, agent.id, agent.version),
        manifest,
        {m.id: m for m in mandates},
        decisions,
        secret,
        now,
        held.revisions,
        None if record is None else record.eval_id,
    )


def decide_agent(
    lookups: Lookups,
    mandates: list[Mandate],
    agent: AgentInfo,
    capability: str,
    now: datetime,
    *,
    record: AgentRecord | None,
) -> list[Decision]:
    """Each mandate's decision on `agent` for `capability`, given the agent's `record` (read
    by the caller: routing reads it to rank, a live call only when a mandate needs it)."""
    live = None
    if any(m.needs_live for m in mandates):
        live = lookups.live(agent.id, capability)
    decide = partial(
        decide_one,
        agent_id=agent.id,
        agent_version=agent.version,
        capability=capability,
        record=record,
        now=now,
        live=live,
        not_advertised=lookups.not_advertised(agent.id, agent.version),
        imported=lookups.imported(agent.id, agent.version, agent.manifest, mandates),
    )
    return [decide(m) for m in mandates]


def refusal(mandate_id: str, refused: BudgetState | RateState) -> Decision:
    """The mandate's denial when the ledger refuses its reservation."""
    if isinstance(refused, BudgetState):
        return Decision(mandate_id, False, "budget_exhausted", refused.to_json())
    return Decision(mandate_id, False, "rate_limited", refused.to_json())


def denial_error(decisions: list[Decision], *, subject: str) -> Denied:
    """The error of a denied call: the reason of the mandate that got furthest, and all of them."""
    if not decisions:
        return Denied(
            f"{subject}: the caller holds no mandate", code="no_mandate", details={"mandates": []}
        )
    # Of several mandates over their rate limits, the one whose next call is soonest.
    best = max(decisions, key=lambda v: (v.stage, -v.numbers.get("retry_after_s", 0)))
    reason = best.reason or "denied"
    details: dict[str, Any] = dict(best.numbers)
    details["mandate"] = best.mandate
    details["mandates"] = [v.to_json() for v in decisions]
    cls = {
        "budget_exhausted": BudgetExhausted,
        "budget_too_small": BudgetExhausted,
        "rate_limited": RateLimited,
    }.get(reason, Denied)
    hint = None
    if reason == "rate_limited":
        hint = f"the next call may go in {details['retry_after_s']} s (at {details['retry_at']})"
    elif reason == "budget_too_small":
        hint = "grant the mandate a budget of at least its max_cost_per_call_usd"
    return cls(
        f"{subject}: denied ({reason}) by mandate {best.mandate}",
        code=reason,
        details=details,
        hint=hint,
    )


def check_mandate(
    lookups: Lookups, mandate_id: str, agent_id: str, capability: str, now: datetime
) -> dict[str, Any]:
    """What a live call of the mandate's holder decided by this mandate alone would get now,
    with its budget's standing: what `holon mandates check` shows. Reads only (nothing is
    reserved, no token taken, no ledger row); needs no executor.

    The same steps as a live call: the holder's active mandates as the call reads them
    (a revoked mandate is not among them: `no_mandate`, with `revoked_at`), the agent
    as the call may reach it (`callable_agent`: 404, 422), `decide_call`, and for an
    allowing mandate the ledger's judgement of its reservation (`budget_exhausted`,
    `rate_limited`). Only the input is not checked: there is none.
    """
    info = lookups.store.mandates.get(mandate_id)  # NotFound for an unknown mandate
    held = lookups.held_mandates(info.holder)
    mine = [m for m in held.mandates if m.id == mandate_id]
    decided = decide_call(
        lookups,
        HeldMandates(mine, {m.id: held.revisions[m.id] for m in mine}),
        info.holder,
        agent_id,
        capability,
        now,
    )
    decisions = decided.decisions
    for index, decision in enumerate(decisions):
        if decision.allow:
            mandate = decided.mandates[decision.mandate]
            refused = lookups.store.ledger.judge(
                mandate.id,
                cap=mandate.max_cost_per_call_usd,
                budget=None
                if mandate.budget is None
                else (mandate.budget.period, mandate.budget.amount_usd),
                rate_limit=mandate.rate_limit,
                now=now,
            )
            if refused is not None:
                decisions[index] = refusal(mandate.id, refused)
    out: dict[str, Any] = {
        "agent": decided.call.agent_id,
        "agent_version": decided.call.agent_version,
        "capability": capability,
    }
    if decisions:
        out.update(decisions[0].to_json())
    else:  # revoked: its holder's calls are decided as if it did not exist
        error = denial_error([], subject=f"{info.holder} calling {agent_id} for {capability}")
        out.update({"mandate": mandate_id, "decision": "deny", "reason": error.code})
        if info.revoked_at is not None:
            out["revoked_at"] = utc_text(info.revoked_at)
    mandate = mine[0] if mine else lookups.mandate(mandate_id)
    if mandate.needs_live:
        out["live"] = lookups.live(decided.call.agent_id or agent_id, capability).to_json()
    if mandate.budget is not None:
        period = period_key(mandate.budget.period, now)
        spent, reserved = lookups.store.ledger.budget(mandate.id, period)
        out["budget"] = BudgetState(
            mandate.id,
            period,
            mandate.budget.amount_usd,
            spent,
            reserved,
            mandate.max_cost_per_call_usd,
            False,
        ).to_json()
    if mandate.rate_limit is not None:
        available = lookups.store.ledger.rate_available(mandate.id, mandate.rate_limit, now=now)
        out["rate_limit"] = {**mandate.rate_limit.to_json(), "available": available}
    return out
