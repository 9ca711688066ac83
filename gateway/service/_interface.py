"""The one interface every CLI command talks to.

Two implementations: `StoreService` works on the store directly (embedded
SQLite or HOLON_DATABASE_URL) and acts as operator; `HttpService` sends the
same calls to a running gateway (`--gateway URL`) with a token, whose role
decides what it may do. Both return the JSON-shaped views of the HTTP API
(gateway/service/_views.py), and both raise the same `HolonError`s, so a
command prints the same output, and exits with the same code, whichever it
is given.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from schema.jsontext import JSONValue

if TYPE_CHECKING:
    from gateway.operations import Operation

JSONObject = dict[str, Any]
R = TypeVar("R")
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


class Service(Protocol):
    """What the CLI may ask of holon. Every method raises `schema.errors.HolonError`s."""

    kind: str  # "store" | "gateway"

    def call(self, operation: Operation[R], request: R) -> JSONObject:
        """One operation of the table (gateway/operations): its view, as the API answers it."""
        ...

    @property
    def evals(self) -> EvalsAPI: ...

    # -- live calls (`holon invoke`) -----------------------------------------
    def invoke(
        self, caller: str | None, agent_id: str | None, capability: str, input: JSONValue
    ) -> JSONObject:
        """A live call (routed when `agent_id` is None). On the store `caller` names
        whose mandates apply; over the gateway the token's caller does, and it is None."""
        ...

    def close(self) -> None: ...
