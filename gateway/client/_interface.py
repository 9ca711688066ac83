"""The one interface every CLI command talks to.

Two implementations: `StoreClient` works on the store directly (embedded
SQLite or HOLON_DATABASE_URL) and acts as operator; the HTTP client (with
the gateway service) sends the same calls to `--gateway URL`. Both return
the JSON-shaped views of the HTTP API, so a command prints the same output
whichever it is given.
"""

from __future__ import annotations

from typing import Any, Protocol

JSONObject = dict[str, Any]


class Client(Protocol):
    """What the CLI may ask of holon. Every method raises `schema.errors.HolonError`s."""

    kind: str  # "store" | "gateway"

    # -- agents -------------------------------------------------------------
    def register_agent(self, manifest: JSONObject, *, source: str) -> JSONObject:
        """Register or update; `{"status", "agent", "previous_version", "warnings"}`."""
        ...

    def list_agents(
        self,
        *,
        org: str | None = None,
        capability: str | None = None,
        include_disabled: bool = False,
        cursor: str | None = None,
        limit: int = 100,
    ) -> JSONObject:
        """`{"items": [agent view], "next_cursor": str | None}`."""
        ...

    def get_agent(self, agent_id: str) -> JSONObject:
        """The agent view with its version history."""
        ...

    def set_agent_disabled(self, agent_id: str, disabled: bool) -> JSONObject: ...

    def set_agent_secret(self, agent_id: str, secret: str) -> None: ...

    def clear_agent_secret(self, agent_id: str) -> bool: ...

    # -- suites -------------------------------------------------------------
    def list_suites(self) -> JSONObject:
        """`{"items": [suite view of each active version]}`."""
        ...

    def get_suite(self, suite_id: str, version: int | None = None) -> JSONObject:
        """The suite view with its installed versions."""
        ...

    def pull_suite(self, suite_id: str, version: int | None = None) -> JSONObject:
        """`{"id", "version", "files": {relative path: text}}`: the public parts only."""
        ...

    def close(self) -> None: ...
