"""What a live call reads from the store, cached for a moment.

A gateway answering hundreds of calls a second would otherwise read the same
agent, mandates and record for every one. Entries live `ttl_s` (default one
second): a revoked mandate, a new record, a disabled agent or what an identity
probe found (a mismatch makes the record stale, an unadvertised capability
is refused) takes effect within that time on every gateway process, without
any cross-process invalidation. Budgets are never cached: they are reserved in the store.

Entries are refreshed ahead of expiry (`gateway._ttl.TtlCache`).

`cached_only()` is a view over the same entries that raises `CacheMiss`
instead of reading the store: a live call decides on the event loop when
everything it needs is cached (the common case), and goes to a worker
thread only when something must be read.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, TypeVar

from agents import Manifest, manifest_from_dict
from gateway._ttl import MISS, TtlCache
from gateway.mandates import Mandate, mandate_from_dict
from records import AgentInfo, Store

__all__ = ["CacheMiss", "Lookups"]

T = TypeVar("T")


class CacheMiss(Exception):
    """A `cached_only()` lookup found no fresh entry: read the store in a worker thread."""


class Lookups:
    def __init__(self, store: Store, *, ttl_s: float = 1.0, max_entries: int = 10_000) -> None:
        self.store = store
        self._cache = TtlCache(ttl_s, max_entries)
        # Parsed documents are immutable per digest: cached without expiry.
        self._manifests: dict[tuple[str, str], tuple[dict[str, Any], Manifest]] = {}
        self._mandates: dict[str, Mandate] = {}
        self._only_cached = False

    def cached_only(self) -> Lookups:
        """A view sharing these entries that raises CacheMiss rather than read the store."""
        view = copy.copy(self)
        view._only_cached = True
        return view

    def _get(self, key: tuple[Any, ...], load: Callable[[], T]) -> T:
        if self._only_cached:
            value: T = self._cache.peek(key, load)
            if value is MISS:
                raise CacheMiss(key)
            return value
        loaded: T = self._cache.get(key, load)
        return loaded

    def clear(self) -> None:
        self._cache.clear()

    def agent(self, agent_id: str) -> AgentInfo:
        return self._get(("agent", agent_id), lambda: self.store.agents.get(agent_id))

    def manifest(self, agent_id: str, version: str, document: dict[str, Any]) -> Manifest:
        key = (agent_id, version)
        hit = self._manifests.get(key)
        # The cached agent hands out the same document object until it expires.
        if hit is not None and (hit[0] is document or hit[0] == document):
            return hit[1]
        manifest = manifest_from_dict(document, f"<agent {agent_id} {version}>")
        self._manifests[key] = (document, manifest)
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

    def not_advertised(self, agent_id: str, version: str) -> tuple[str, ...]:
        """The claimed capabilities the version's last identity probe did not advertise."""

        def load() -> tuple[str, ...]:
            found = self.store.identities.get(agent_id, version)
            return () if found is None else found.not_advertised

        return self._get(("identity", agent_id, version), load)

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
