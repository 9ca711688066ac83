"""An org's holdout budget on each suite an eval of its agent would run (docs/integrity.md,
"Exposure"): what is left of it, and when it renews; read before an eval is started, so
that whoever starts it sees what the eval spends.

What an author may read: its own org's spend and the instance set's reveals by every org
together (the counts a withheld plan names), never another org's rows, never the epoch
or the instance set's name.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.service import StoreService

__all__ = ["holdout_budget"]


def holdout_budget(service: StoreService, agent_id: str) -> list[dict[str, Any]]:
    """Per suite the agent's full eval would run: the org's budget left on its current
    holdout instances, the instance set's, and when a new epoch renews them (None: a
    stored holdout, renewed only by a new suite version)."""
    from gateway.service import EvalOptions
    from records import utc_text

    store = service.store
    plan = service.evals.plan(agent_id, EvalOptions(concurrency=1, retries=0))
    org = plan.agent.org
    rows = []
    for planned in plan.suites:
        suite, limits = planned.suite, planned.suite.limits
        spent = store.exposure.spent(org, suite.id, planned.instance_set)
        revealed = store.exposure.instance_revealed(suite.id, planned.instance_set)
        installed = store.suites.get(suite.id, suite.version)
        # A generated holdout or a pool renews with its next epoch; a file used whole never.
        rotation = suite.rotation
        renews = (
            None
            if rotation is None
            else utc_text(installed.epoch_started_at + timedelta(days=rotation.rotate_after_days))
        )
        rows.append(
            {
                "suite": suite.id,
                "version": suite.version,
                "limit": limits.holdout_evals_per_epoch,
                "spent": spent,
                "left": max(0, limits.holdout_evals_per_epoch - spent),
                "instance_limit": limits.holdout_evals_per_instance_set,
                "instance_left": max(0, limits.holdout_evals_per_instance_set - revealed),
                "renews_at": renews,
                "withheld": None if planned.withheld is None else planned.withheld.message(),
            }
        )
    return rows
