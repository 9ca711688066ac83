"""What a decision says outside the call path: the error of a denied call, and the dry
run of one mandate (`holon mandates check`), which reads and writes nothing else."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from gateway.live._cache import Lookups
from gateway.mandates import Decision, decide_one
from records import BudgetState, period_key
from schema.errors import BudgetExhausted, Denied, RateLimited

__all__ = ["check_mandate", "denial_error"]


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
    cls = {"budget_exhausted": BudgetExhausted, "rate_limited": RateLimited}.get(reason, Denied)
    hint = None
    if reason == "rate_limited":
        hint = f"the next call may go in {details['retry_after_s']} s (at {details['retry_at']})"
    return cls(
        f"{subject}: denied ({reason}) by mandate {best.mandate}",
        code=reason,
        details=details,
        hint=hint,
    )


def check_mandate(
    lookups: Lookups, mandate_id: str, agent_id: str, capability: str, now: datetime
) -> dict[str, Any]:
    """One mandate's decision on a call, with its budget's standing: what `holon mandates
    check` shows. Reads only; needs no executor."""
    mandate = lookups.mandate(mandate_id)
    agent = lookups.agent(agent_id)
    record = lookups.record(agent.id, agent.version) if mandate.needs_record else None
    live = lookups.live(agent.id, capability) if mandate.needs_live else None
    decision = decide_one(
        mandate,
        agent_id=agent.id,
        agent_version=agent.version,
        capability=capability,
        record=record,
        now=now,
        live=live,
        not_advertised=lookups.not_advertised(agent.id, agent.version),
        imported=lookups.imported(agent.id, agent.version, agent.manifest, [mandate]),
    )
    out: dict[str, Any] = {
        "agent": agent.id,
        "agent_version": agent.version,
        "capability": capability,
        **decision.to_json(),
    }
    if live is not None:
        out["live"] = live.to_json()
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
