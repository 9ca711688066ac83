"""What a live call reads from the store, cached for a moment.

A gateway answering hundreds of calls a second would otherwise read the same
agent, mandates and record for every one. Entries live `ttl_s` (default one
second): a revoked mandate, a new record or a disabled agent takes effect
within that time on every gateway process, without any cross-process
invalidation. Budgets are never cached: they are reserved in the store.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from agents import Manifest, manifest_from_dict
from gateway.mandates import Mandate, mandate_from_dict
from records import AgentInfo, Store

__all__ = ["Lookups"]

T = TypeVar("T")
_MISSING = object()


class Lookups:
    def __init__(self, store: Store, *, ttl_s: float = 1.0, max_entries: int = 10_000) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[tuple[Any, ...], tuple[float, Any]] = {}
        # Parsed documents are immutable per digest: cached without expiry.
        self._manifests: dict[tuple[str, str], Manifest] = {}
        self._mandates: dict[str, Mandate] = {}

    def _get(self, key: tuple[Any, ...], load: Callable[[], T]) -> T:
        now = time.monotonic()
        hit = self._entries.get(key)
        if hit is not None and hit[0] > now:
            value: T = hit[1]
            return value
        value = load()
        if self.ttl_s > 0:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = (now + self.ttl_s, value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def agent(self, agent_id: str) -> AgentInfo:
        return self._get(("agent", agent_id), lambda: self.store.agents.get(agent_id))

    def manifest(self, agent_id: str, version: str, document: dict[str, Any]) -> Manifest:
        key = (agent_id, version)
        manifest = self._manifests.get(key)
        if manifest is None or manifest.to_json() != document:
            manifest = manifest_from_dict(document, f"<agent {agent_id} {version}>")
            self._manifests[key] = manifest
        return manifest

    def _parse(self, document: dict[str, Any], digest: str) -> Mandate:
        mandate = self._mandates.get(digest)
        if mandate is None:
            mandate = mandate_from_dict(document, f"<mandate {document.get('id')}>")
            self._mandates[digest] = mandate
        return mandate

    def mandates_of(self, holder: str) -> list[Mandate]:
        def load() -> list[Mandate]:
            return [
                self._parse(m.document, m.digest) for m in self.store.mandates.for_holder(holder)
            ]

        return self._get(("mandates", holder), load)

    def mandate(self, mandate_id: str) -> Mandate:
        info = self.store.mandates.get(mandate_id)
        return self._parse(info.document, info.digest)

    def record(self, agent_id: str, version: str) -> dict[str, Any] | None:
        return self._get(
            ("record", agent_id, version),
            lambda: self.store.evals.current_record_with_staleness(agent_id, version),
        )

    def secret(self, agent_id: str) -> str | None:
        return self._get(("secret", agent_id), lambda: self.store.agents.secret(agent_id))

    def agents_claiming(self, capability: str) -> list[AgentInfo]:
        def load() -> list[AgentInfo]:
            out: list[AgentInfo] = []
            cursor = None
            while True:
                page = self.store.agents.list(capability=capability, cursor=cursor, limit=500)
                out += page.items
                if page.next_cursor is None:
                    return out
                cursor = page.next_cursor

        return self._get(("claiming", capability), load)
