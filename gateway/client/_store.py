"""The client interface over the store itself: the CLI acting as operator."""

from __future__ import annotations

import logging
from typing import Any

from agents import manifest_from_dict
from gateway.client._views import agent_view
from gateway.settings import Settings
from records import Store, open_store

log = logging.getLogger(__name__)

JSONObject = dict[str, Any]


class StoreClient:
    kind = "store"

    def __init__(self, store: Store) -> None:
        self.store = store

    @classmethod
    def from_settings(cls, settings: Settings) -> StoreClient:
        store = open_store(
            settings.database_url,
            secret_key=settings.resolve_secret_key(),
            auto_upgrade=settings.embedded,
        )
        return cls(store)

    def close(self) -> None:
        self.store.close()

    # -- agents -------------------------------------------------------------

    def register_agent(self, manifest: JSONObject, *, source: str) -> JSONObject:
        # Validate again here: whatever reaches the store passed the schema,
        # whichever door it came through.
        parsed = manifest_from_dict(manifest, source)
        registration = self.store.agents.register(parsed.to_json())
        warnings = [
            {
                "code": "unverified_capability",
                "capability": capability,
                "message": f"no installed suite certifies {capability}: the claim stays "
                "unverifiable, its record's eval_score stays null and "
                "min_eval_score mandates deny it",
            }
            for capability in parsed.capabilities
            if capability not in self._certified_capabilities()
        ]
        log.info("agent %s %s at version %s", parsed.id, registration.status, parsed.version)
        return {
            "status": registration.status,
            "agent": agent_view(registration.agent),
            "previous_version": registration.previous_version,
            "warnings": warnings,
        }

    def _certified_capabilities(self) -> set[str]:
        # Capabilities with an active installed suite. Suites are installed
        # into the store by `holon suites add` (evals); until one is, every
        # claim is unverifiable.
        return set()

    def list_agents(
        self,
        *,
        org: str | None = None,
        capability: str | None = None,
        include_disabled: bool = False,
        cursor: str | None = None,
        limit: int = 100,
    ) -> JSONObject:
        page = self.store.agents.list(
            org=org,
            capability=capability,
            include_disabled=include_disabled,
            cursor=cursor,
            limit=limit,
        )
        return {"items": [agent_view(a) for a in page.items], "next_cursor": page.next_cursor}

    def get_agent(self, agent_id: str) -> JSONObject:
        info = self.store.agents.get(agent_id)
        return agent_view(info, self.store.agents.history(agent_id))

    def set_agent_disabled(self, agent_id: str, disabled: bool) -> JSONObject:
        info = self.store.agents.set_disabled(agent_id, disabled)
        return agent_view(info)

    def set_agent_secret(self, agent_id: str, secret: str) -> None:
        self.store.agents.set_secret(agent_id, secret)

    def clear_agent_secret(self, agent_id: str) -> bool:
        return self.store.agents.clear_secret(agent_id)
