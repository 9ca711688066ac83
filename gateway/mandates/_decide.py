"""Deciding a live call (docs/gateway.md, "Mandates"): allow, or deny with a reason and its numbers.

Pure: everything arrives as arguments (the mandates, the agent's current
record with its staleness, the clock), so a decision can be replayed and
dry-run (`holon mandates check`). Budgets are not decided here: they are
reserved atomically in the ledger, after a mandate allows.

A missing or stale record fails closed whenever a mandate reads records.
The agent's live conformance (`live`: its answers and contract violations
over the window, records._conformance) is read only by a mandate with
`max_live_violation_rate`, and applies once the window holds the mandate's
`min_live_calls` answers: before that the eval record alone vouches for the
agent, and every answer is still checked against the contract on its own.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

from evals import admits_lower, eval_score_lower
from gateway.mandates._document import SELF_ISSUER, Mandate
from records import AgentRecord, LiveConformance, RecordSuite, utc_text

__all__ = [
    "DENY_REASONS",
    "RESERVE_REASONS",
    "Decision",
    "budget_too_small",
    "decide_one",
]

# Every reason a mandate denies a call for, in the order they are checked: a later
# reason means the mandate got further. The one declaration: `Decision.stage` refuses
# any other, the docs' list and the check's tests are read from it. Up to
# `budget_too_small` they are decided here, from the mandate alone (`decide_one`);
# `RESERVE_REASONS` are the ledger's, when the reservation is tried. The ledger
# checks a reservation's budget before its rate limit (records._ledger): a mandate
# that cannot pay is `budget_exhausted` whatever its bucket holds (a "retry later"
# would not be true), and one only rate limited got furthest: the caller may call
# again at its Retry-After.
DENY_REASONS = (
    "no_mandate",
    "mandate_expired",
    "capability_not_allowed",
    "agent_not_allowed",
    "capability_not_advertised",
    "not_evaluated",
    "issuer_not_accepted",
    "unverified_capability",
    "eval_stale",
    "drift_detected",
    "eval_score_below_minimum",
    "eval_score_lower_below_minimum",
    "capability_score_below_minimum",
    "overfit_warning",
    "live_score_below_minimum",
    "live_violation_rate_above_maximum",
    "budget_too_small",
    "budget_exhausted",
    "rate_limited",
)
RESERVE_REASONS = ("budget_exhausted", "rate_limited")


@dataclass(frozen=True)
class Decision:
    """One mandate's decision on one (agent, capability)."""

    mandate: str
    allow: bool
    reason: str | None = None
    numbers: dict[str, Any] = field(default_factory=dict)
    # The certificate of the record an allowing mandate relied on (the ledger names it).
    certificate_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "mandate": self.mandate,
            "decision": "allow" if self.allow else "deny",
        }
        if self.reason is not None:
            out["reason"] = self.reason
        out.update(self.numbers)
        return out

    @property
    def stage(self) -> int:
        return len(DENY_REASONS) if self.reason is None else DENY_REASONS.index(self.reason)


def _deny(mandate: Mandate, reason: str, **numbers: Any) -> Decision:
    return Decision(mandate.id, False, reason, numbers)


def decide_one(
    mandate: Mandate,
    *,
    agent_id: str,
    agent_version: str,
    capability: str,
    record: AgentRecord | None,
    now: datetime,
    live: LiveConformance | None = None,
    not_advertised: Collection[str] = (),
    imported: Sequence[AgentRecord] = (),
) -> Decision:
    """Whether `mandate` lets its holder call `agent_id` for `capability` now.

    `not_advertised`: the claimed capabilities the agent's last identity probe
    did not advertise; the agent denies them, so no mandate allows them.
    `record` is this store's record; `imported` the records other issuers'
    certificates carry (each with its `issuer`): the mandate reads the first
    whose issuer it accepts (`accept_issuers`), its own store's first.
    """
    if mandate.expires_at is not None and now >= mandate.expires_at:
        return _deny(mandate, "mandate_expired", expires_at=utc_text(mandate.expires_at))
    if capability not in mandate.capabilities:
        return _deny(
            mandate,
            "capability_not_allowed",
            capability=capability,
            allowed=list(mandate.capabilities),
        )
    if not mandate.allows_agent(agent_id):
        return _deny(
            mandate, "agent_not_allowed", agent=agent_id, allowed=list(mandate.agents or ())
        )
    if capability in not_advertised:
        return _deny(
            mandate,
            "capability_not_advertised",
            agent=agent_id,
            agent_version=agent_version,
            capability=capability,
        )
    certificate_id = None
    if mandate.needs_record:
        chosen = _accepted_record(mandate, record, imported)
        if chosen is None:
            unchecked = sorted(
                {
                    str(r.issuer)
                    for r in imported
                    if r.revocation_unchecked and mandate.accepts(str(r.issuer))
                }
            )
            if record is None and not imported:
                return _deny(mandate, "not_evaluated", agent=agent_id, agent_version=agent_version)
            # Records exist, but only from issuers this mandate does not take evidence from.
            return _deny(
                mandate,
                "issuer_not_accepted",
                agent=agent_id,
                agent_version=agent_version,
                issuers=sorted(
                    {str(r.issuer) for r in imported}
                    | ({SELF_ISSUER} if record is not None else set())
                ),
                accept_issuers=list(mandate.accept_issuers),
                **({"unchecked_revocation": unchecked} if unchecked else {}),
            )
        decision = _against_record(mandate, capability, chosen, now)
        if not decision.allow:
            return decision
        certificate_id = chosen.certificate_id
    if mandate.max_live_violation_rate is not None:
        decision = _against_live(mandate, live)
        if not decision.allow:
            return decision
    too_small = budget_too_small(mandate)
    if too_small is not None:
        return too_small
    return Decision(mandate.id, True, certificate_id=certificate_id)


def budget_too_small(mandate: Mandate) -> Decision | None:
    """The denial of a mandate whose budget cannot pay one call's worst case (its per-call
    cap) even when nothing is spent: no reservation under it can ever succeed, so saying
    `budget_exhausted` with nothing spent would send the operator looking for spending."""
    budget = mandate.budget
    if budget is None or mandate.max_cost_per_call_usd <= budget.amount_usd:
        return None
    return _deny(
        mandate,
        "budget_too_small",
        amount_usd=str(budget.amount_usd),
        period=budget.period,
        max_cost_per_call_usd=str(mandate.max_cost_per_call_usd),
    )


def _accepted_record(
    mandate: Mandate, record: AgentRecord | None, imported: Sequence[AgentRecord]
) -> AgentRecord | None:
    """The record the mandate reads: this store's if it accepts it, else the first imported
    one of an issuer it accepts, whose revocation was checked unless the mandate accepts
    unchecked ones."""
    if record is not None and mandate.accepts(SELF_ISSUER):
        return record
    for candidate in imported:
        if candidate.revocation_unchecked and not mandate.accept_unchecked_revocation:
            continue
        if mandate.accepts(str(candidate.issuer)):
            return candidate
    return None


def _against_live(mandate: Mandate, live: LiveConformance | None) -> Decision:
    """Deny over the mandate's maximum live violation rate, once the window has enough calls."""
    maximum = mandate.max_live_violation_rate
    rate = None if live is None else live.rate
    if maximum is None or live is None or rate is None or live.calls < mandate.min_live_calls:
        return Decision(mandate.id, True)
    if live.broken > maximum * live.calls:  # exact: the rate shown is rounded
        return _deny(
            mandate,
            "live_violation_rate_above_maximum",
            live_calls=live.calls,
            live_violations=live.violations,
            live_check_failures=live.check_failures,
            live_violation_rate=rate,
            max_live_violation_rate=maximum,
            min_live_calls=mandate.min_live_calls,
            window_days=live.to_json()["window_days"],
            since=live.since,
        )
    return Decision(mandate.id, True)


def _against_record(
    mandate: Mandate, capability: str, record: AgentRecord, now: datetime
) -> Decision:
    eval_score = record.eval_score
    unverified = list(record.unverified_capabilities)
    suite_id, suite = _suite_for(record, capability)
    if eval_score is None and (
        mandate.min_eval_score is not None or mandate.min_eval_score_lower is not None
    ):
        return _deny(
            mandate,
            "unverified_capability" if unverified else "not_evaluated",
            unverified_capabilities=unverified,
            **(
                {"min_eval_score": mandate.min_eval_score}
                if mandate.min_eval_score is not None
                else {"min_eval_score_lower": mandate.min_eval_score_lower}
            ),
        )
    if mandate.min_capability_score is not None and (suite is None or suite.score is None):
        return _deny(
            mandate,
            "unverified_capability",
            capability=capability,
            min_capability_score=mandate.min_capability_score,
        )
    if record.stale:
        return _deny(mandate, "eval_stale", stale_reasons=list(record.stale_reasons or ()))
    if mandate.deny_on_drift and record.drifted:
        # What a caller learns here is what an author's view of the record says: which
        # capabilities drifted, never the counts (docs/integrity.md, "Canaries").
        canaries = record.canaries or {}
        return _deny(
            mandate,
            "drift_detected",
            drifted=sorted(c for c, found in canaries.items() if found.drifted),
            record_eval_id=record.eval_id,
        )
    if mandate.max_eval_age_days is not None:
        age = now - record.evaluated_at
        if age.total_seconds() > mandate.max_eval_age_days * 86400:
            return _deny(
                mandate,
                "eval_stale",
                evaluated_at=utc_text(record.evaluated_at),
                age_days=round(Decimal(age.total_seconds()) / 86400, 2),
                max_eval_age_days=mandate.max_eval_age_days,
            )
    if (
        mandate.min_eval_score is not None
        and eval_score is not None
        and eval_score < mandate.min_eval_score
    ):
        return _deny(
            mandate,
            "eval_score_below_minimum",
            eval_score=eval_score,
            min_eval_score=mandate.min_eval_score,
            weakest_suite=record.weakest_suite,
        )
    if mandate.min_eval_score_lower is not None:
        # The bound is paid for selection: k counts every org's holdout-revealing
        # evals on each suite, since one author may hold many orgs (the record view
        # carries them as holdout_evals).
        revealed = record.holdout_evals or {}
        if not admits_lower(record, revealed, mandate.min_eval_score_lower):
            lower, ks = eval_score_lower(record, revealed)
            return _deny(
                mandate,
                "eval_score_lower_below_minimum",
                eval_score_lower=lower,
                holdout_evals=ks,
                min_eval_score_lower=mandate.min_eval_score_lower,
                eval_score=eval_score,
            )
    if mandate.min_capability_score is not None and suite is not None:
        score = suite.score
        if score is not None and score < mandate.min_capability_score:
            return _deny(
                mandate,
                "capability_score_below_minimum",
                capability=capability,
                suite=suite_id,
                capability_score=score,
                min_capability_score=mandate.min_capability_score,
            )
    if mandate.deny_on_overfit:
        warnings = [w.to_json() for w in record.warnings if w.code == "overfit"]
        if warnings:
            return _deny(mandate, "overfit_warning", warnings=warnings)
    if mandate.min_live_score is not None:
        mine = (record.canaries or {}).get(capability)
        graded = 0 if mine is None else mine.graded or 0
        passed = 0 if mine is None else mine.passed or 0
        # Exact: passed / graded < minimum, without rounding either.
        if graded >= mandate.min_canaries and passed < mandate.min_live_score * graded:
            return _deny(
                mandate,
                "live_score_below_minimum",
                capability=capability,
                min_live_score=mandate.min_live_score,
                min_canaries=mandate.min_canaries,
            )
    return Decision(mandate.id, True)


def _suite_for(record: AgentRecord, capability: str) -> tuple[str | None, RecordSuite | None]:
    """The suite of the record that grades `capability` (one active suite per capability)."""
    for suite_id, suite in sorted(record.suites.items()):
        if suite.capability == capability:
            return suite_id, suite
    return None, None
