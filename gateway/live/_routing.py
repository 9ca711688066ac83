"""Routing's ranking: which agents a caller's mandates allow for a capability, best first.

Best: highest eval_score, then lowest per-call price, then id (docs/gateway.md,
"Routing"). Each agent is decided by the live call's own decision
(`decide_agent`), so a routed call and a front door's listing
(`LiveCalls.callable_agents`: the OpenAI door's `/v1/models`) see the same
agents a direct call to each would be allowed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from gateway.live._cache import Lookups
from gateway.live._decision import decide_agent
from gateway.mandates import Decision
from records import AgentInfo

__all__ = ["CallableAgent", "rank"]


@dataclass(frozen=True)
class CallableAgent:
    """An agent a caller's mandates allow for a capability now (`LiveCalls.callable_agents`):
    its record's eval score and the certificate the allowing mandate accepted, if any."""

    agent: AgentInfo
    eval_score: Decimal | None
    certificate_id: str | None


def rank(
    lookups: Lookups, caller: str, capability: str, agents: list[AgentInfo], now: datetime
) -> tuple[list[CallableAgent], list[Decision]]:
    """The allowed `agents`, best first, and every mandate's denial of the others."""
    mandates = lookups.held_mandates(caller).mandates
    ranked: list[tuple[Decimal, Decimal, str, CallableAgent]] = []
    decisions: list[Decision] = []
    for agent in agents:
        record = lookups.record(agent.id, agent.version)  # its score ranks it
        mine = decide_agent(lookups, mandates, agent, capability, now, record=record)
        allowing = next((v for v in mine if v.allow), None)
        if allowing is not None:
            score = Decimal(0) if record is None else record.eval_score or Decimal(0)
            price = Decimal(str(agent.manifest.get("pricing", {}).get("per_call_usd", "0")))
            found = CallableAgent(
                agent, None if record is None else record.eval_score, allowing.certificate_id
            )
            ranked.append((-score, price, agent.id, found))
        else:
            decisions += [
                Decision(v.mandate, False, v.reason, {**v.numbers, "agent": agent.id}) for v in mine
            ]
    ranked.sort(key=lambda item: item[:3])
    return [item[3] for item in ranked], decisions
