"""An org's live figures: its agents' calls, denials, contract violations and cost over the
live window (docs/console.md, "Org pages"), as aggregates over every caller together: an
org reads no caller's rows (the ledger is the operator's and each caller's own)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.service import StoreService

__all__ = ["MAX_LIVE_AGENTS", "live_figures"]

MAX_LIVE_AGENTS = 1000  # agents of one org summed on one page


def live_figures(service: StoreService, org: str) -> dict[str, Any]:
    """Per agent of `org` and in all: calls allowed, denied, the contract violations of
    its answers, and their cost, since the live window's first day (UTC)."""
    from records import live_window_start, utcnow

    store = service.store
    since_day = live_window_start(utcnow())
    since = datetime.strptime(since_day, "%Y-%m-%d").replace(tzinfo=UTC)
    agents = [
        a.id for a in store.agents.list(org=org, include_disabled=True, limit=MAX_LIVE_AGENTS).items
    ]
    totals = store.ledger.agent_totals(agents, since=since)
    violations = {a: 0 for a in agents}
    for row in store.conformance.window():
        if row.agent_id in violations:
            violations[row.agent_id] += row.violations
    rows = [
        {
            "agent": a,
            "allowed": totals[a].allowed,
            "denied": totals[a].denied,
            "violations": violations[a],
            "cost_usd": str(totals[a].cost_usd),
        }
        for a in agents
    ]
    return {
        "since": since_day,
        "agents": rows,
        "allowed": sum(r["allowed"] for r in rows),
        "denied": sum(r["denied"] for r in rows),
        "violations": sum(r["violations"] for r in rows),
        "cost_usd": str(sum((totals[a].cost_usd for a in agents), start=Decimal(0))),
    }
