"""The one interface every CLI command talks to.

Two implementations: `StoreService` (gateway.service) works on the store
directly (embedded SQLite or HOLON_DATABASE_URL) and acts as operator;
`HttpService` (here) sends the same calls to a running gateway (`--gateway
URL`) with a token, whose role decides what it may do. Both return the
JSON-shaped views of the HTTP API (gateway/service/_views.py), and both raise
the same `HolonError`s, so a command prints the same output, and exits with
the same code, whichever it is given.

It sits with the client, above the operation table whose operations `call`
takes; the store's service below the table matches it by its shape alone.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from gateway.operations import Operation
from gateway.service import EvalsAPI
from schema.jsontext import JSONValue

__all__ = ["Service"]

JSONObject = dict[str, Any]
R = TypeVar("R")


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
