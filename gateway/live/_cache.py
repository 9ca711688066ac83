"""What a live call reads from the store, cached for a moment.

A gateway answering hundreds of calls a second would otherwise read the same
agent, mandates and record for every one. Entries live `ttl_s` (default one
second): a revoked mandate, a new record, a disabled agent or what an identity
probe found (a mismatch makes the record stale, an unadvertised capability
is refused) takes effect within that time on every gateway process, without
any cross-process invalidation. Budgets are never cached: they are reserved in the store.

A capability's contract (its active suite version's schemas, compiled) is
kept by suite id and version without expiry, since a version is fixed
content; which version is active for the capability is an entry like the
others. So the common call checks its input and output on the loop, with no
store read.

Entries are refreshed ahead of expiry (`gateway._ttl.TtlCache`).

`cached_only()` is a view over the same entries that raises `CacheMiss`
instead of reading the store: a live call decides on the event loop when
everything it needs is cached (the common case), and goes to a worker
thread only when something must be read.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from agents import Manifest, manifest_from_dict
from evals.suites import Contract, contract_from_files
from gateway._ttl import MISS, TtlCache
from gateway.mandates import Mandate, mandate_from_dict
from records import AgentInfo, AgentRecord, LiveConformance, Store, utcnow

__all__ = ["CacheMiss", "HeldMandates", "Lookups"]

T = TypeVar("T")


@dataclass(frozen=True)
class HeldMandates:
    """A holder's active mandates and the revision of each, read together (one cache entry:
    a ledger row names the revision of the very document that decided it)."""

    mandates: list[Mandate]
    revisions: dict[str, int]


class CacheMiss(Exception):
    """A `cached_only()` lookup found no fresh entry: read the store in a worker thread."""


class Lookups:
    def __init__(self, store: Store, *, ttl_s: float = 1.0, max_entries: int = 10_000) -> None:
        self.store = store
        self._cache = TtlCache(ttl_s, max_entries)
        # Parsed documents are immutable per digest: cached without expiry.
        self._manifests: dict[tuple[str, str], tuple[dict[str, Any], Manifest]] = {}
        self._mandates: dict[str, Mandate] = {}
        # A suite version's contract is fixed content: compiled once, by (suite id, version).
        self._contracts: dict[tuple[str, int], Contract] = {}
        # One compile per version: a cold gateway's first calls, all missing it at once in
        # their worker threads, wait for that compile instead of each doing it (16 callers
        # compiled it 15 times in the contract bench's warm-up). One lock for all versions:
        # compiles are rare, and a second suite's waits at most for the first's.
        self._compiling = threading.Lock()
        self._only_cached = False
        self._view: Lookups | None = None

    def cached_only(self) -> Lookups:
        """A view sharing these entries that raises CacheMiss rather than read the store."""
        view = self._view
        if view is None:  # made once: it shares every entry, so one serves every call
            view = copy.copy(self)
            view._only_cached = True
            self._view = view
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
        return self.held_mandates(holder).mandates

    def held_mandates(self, holder: str) -> HeldMandates:
        def load() -> HeldMandates:
            held = self.store.mandates.for_holder(holder)
            return HeldMandates(
                [self._parse(m.document, m.digest) for m in held],
                {m.id: m.revision for m in held},
            )

        return self._get(("mandates", holder), load)

    def mandate(self, mandate_id: str) -> Mandate:
        info = self.store.mandates.get(mandate_id)
        return self._parse(info.document, info.digest)

    def record(self, agent_id: str, version: str) -> AgentRecord | None:
        return self._get(
            ("record", agent_id, version),
            lambda: self.store.evals.current_record_with_staleness(agent_id, version),
        )

    def imported(
        self, agent_id: str, version: str, manifest: dict[str, Any], mandates: list[Mandate]
    ) -> list[AgentRecord]:
        """The records other issuers' certificates carry for the version, when a mandate
        may read one (it accepts another issuer) or must say why it does not (no record of
        this store's): none is read otherwise, so the common call costs nothing more."""
        reading = [m for m in mandates if m.needs_record]
        if not reading:
            return []
        if (
            not any(m.accepts_imported for m in reading)
            and self.record(agent_id, version) is not None
        ):
            return []

        def load() -> list[AgentRecord]:
            return self.store.certificates.imported_records(
                agent_id, version, manifest, now=utcnow()
            )

        return self._get(("imported", agent_id, version), load)

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

    def contract(self, capability: str) -> Contract | None:
        """The contract of the suite active for `capability`, or None when no suite certifies it."""

        def load() -> tuple[str, int] | None:
            installed = self.store.suites.for_capability(capability)
            return None if installed is None else (installed.id, installed.version)

        key = self._get(("suite", capability), load)
        if key is None:
            return None
        compiled = self._contracts.get(key)
        if compiled is None:
            if self._only_cached:
                raise CacheMiss(key)
            with self._compiling:
                compiled = self._contracts.get(key)
                if compiled is None:
                    files = self.store.suites.files(*key)
                    compiled = contract_from_files(key[0], key[1], capability, files)
                    self._contracts[key] = compiled
        return compiled

    def live(self, agent_id: str, capability: str) -> LiveConformance:
        """The agent's live conformance for `capability` over the window (records._conformance)."""
        return self._get(
            ("live", agent_id, capability),
            lambda: self.store.conformance.of(agent_id, capability),
        )
