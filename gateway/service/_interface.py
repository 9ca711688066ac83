"""What the CLI asks of an eval, whichever service runs it: its options, the plan
shown before it starts, its progress, and the evals' interface (`EvalsAPI`).

Both services take and give these: `StoreService` here, and `HttpService`
(gateway/client) over a gateway's API, whose `Service` protocol names them.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

JSONObject = dict[str, Any]
# Called with {"done", "passed", "cost_usd"} as an eval's cells finish.
Progress = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class EvalOptions:
    """What `holon eval` asks for beyond the agent (POST /v1/evals's body)."""

    suites: list[str] | None = None
    repetitions: int | None = None
    concurrency: int = 16
    retries: int = 2
    pace_s: float = 0.0
    max_cost: Decimal | None = None
    # Local processes sharing the concurrency (evals._processes); the store's service only.
    processes: int = 1


@dataclass(frozen=True)
class Proposal:
    """A planned eval, shown and confirmed before it runs.

    `view` is the plan as the API shows it; `plan` is what the service needs
    to start it (the store's Plan, or the gateway's request body).
    """

    agent: str
    view: JSONObject
    plan: Any
    processes: int = 1  # EvalOptions.processes, checked against the plan

    @property
    def cells(self) -> int:
        return int(self.view["cells"])


class EvalsAPI(Protocol):
    """Running evals from the CLI, and records (`service.evals`); following, reporting and
    comparing them are operations of the table (`service.call`, gateway/operations)."""

    def propose(self, agent_id: str, options: EvalOptions) -> Proposal:
        """Plan an eval without starting it (refused over `options.max_cost`)."""
        ...

    def execute(self, proposal: Proposal, progress: Progress | None) -> JSONObject:
        """Start a proposed eval and follow it to its end; the final eval view."""
        ...

    def resume(self, eval_id: str, progress: Progress | None, *, processes: int = 1) -> JSONObject:
        """Continue an interrupted eval and follow it to its end (over `processes`
        local processes: the store's service only)."""
        ...

    def record(self, agent_id: str) -> JSONObject:
        """The agent's current record (with `stale`)."""
        ...

    def agents_claiming(self, capability: str) -> builtins.list[str]:
        """Every enabled agent claiming `capability` (for `holon eval --all`)."""
        ...
