"""What a live call reads from the store, cached for a moment.

A gateway answering hundreds of calls a second would otherwise read the same
agent, mandates and record for every one. Entries live `ttl_s` (default one
second): a revoked mandate, a new record or a disabled agent takes effect
within that time on every gateway process, without any cross-process
invalidation. Budgets are never cached: they are reserved in the store.

Entries are refreshed ahead: a hit in the second half of an entry's life
queues one background reload (on a shared refresher thread: starting a
thread would block the event loop until it runs) and still answers from the
entry, so under steady traffic the store is read once per key every half
TTL, off the request path, instead of by every request that arrives when
the entry has just expired. An entry's expiry counts from when its load
started, so nothing older than `ttl_s` is ever served.

`cached_only()` is a view over the same entries that raises `CacheMiss`
instead of reading the store: a live call decides on the event loop when
everything it needs is cached (the common case), and goes to a worker
thread only when something must be read.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from agents import Manifest, manifest_from_dict
from gateway.mandates import Mandate, mandate_from_dict
from records import AgentInfo, Store

log = logging.getLogger(__name__)

# Reloads of entries about to expire, off the request path (idle when there is no traffic).
_REFRESHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="holon-lookup")

__all__ = ["CacheMiss", "Lookups"]

T = TypeVar("T")


class CacheMiss(Exception):
    """A `cached_only()` lookup found no fresh entry: read the store in a worker thread."""


class Lookups:
    def __init__(self, store: Store, *, ttl_s: float = 1.0, max_entries: int = 10_000) -> None:
        self.store = store
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[tuple[Any, ...], tuple[float, Any]] = {}
        # Parsed documents are immutable per digest: cached without expiry.
        self._manifests: dict[tuple[str, str], tuple[dict[str, Any], Manifest]] = {}
        self._mandates: dict[str, Mandate] = {}
        self._only_cached = False
        self._refreshing: set[tuple[Any, ...]] = set()

    def cached_only(self) -> Lookups:
        """A view sharing these entries that raises CacheMiss rather than read the store."""
        view = copy.copy(self)
        view._only_cached = True
        return view

    def _get(self, key: tuple[Any, ...], load: Callable[[], T]) -> T:
        now = time.monotonic()
        hit = self._entries.get(key)
        if hit is not None and hit[0] > now:
            if hit[0] - now < self.ttl_s / 2 and key not in self._refreshing:
                self._refreshing.add(key)
                _REFRESHER.submit(self._refresh, key, load)
            value: T = hit[1]
            return value
        if self._only_cached:
            raise CacheMiss(key)
        value = load()
        self._put(key, now, value)
        return value

    def _put(self, key: tuple[Any, ...], started: float, value: Any) -> None:
        if self.ttl_s > 0:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = (started + self.ttl_s, value)

    def _refresh(self, key: tuple[Any, ...], load: Callable[[], Any]) -> None:
        started = time.monotonic()
        try:
            self._put(key, started, load())
        except Exception as exc:  # the entry expires as usual; the next miss reads again
            log.warning("refreshing the cached %s failed: %s", key[0], exc)
        finally:
            self._refreshing.discard(key)

    def clear(self) -> None:
        self._entries.clear()

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
