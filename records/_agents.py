"""The agent registry: manifests by (agent, version), history kept, secrets encrypted.

Manifests arrive already validated (agents.parse_manifest) as JSON documents;
this layer stores them and never imports the agents package.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, TypeVar

from sqlalchemy import Select, and_, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from records._models import Agent, AgentSecret, AgentVersion
from records._pages import Page, check_limit, decode_cursor, encode_cursor
from records._registry import Registry
from records._rows import from_row
from records._types import utc_text, utcnow
from schema.errors import Conflict, NotFound
from schema.jsontext import dumps

__all__ = ["AgentInfo", "AgentRegistry", "Registration", "VersionInfo"]

# Rows read per session when a `keep` predicate filters a listing.
_CHUNK = 200

RegisterStatus = Literal["created", "updated", "unchanged", "reactivated"]


@dataclass(frozen=True)
class VersionInfo:
    version: str
    seq: int
    manifest: dict[str, Any]
    manifest_digest: str
    registered_at: datetime

    def to_json(self, current: str) -> dict[str, Any]:
        """Schema `entities/agent`, `versions[]`; `current` is the agent's current version."""
        return {
            "version": self.version,
            "registered_at": utc_text(self.registered_at),
            "manifest_digest": self.manifest_digest,
            "current": self.version == current,
        }


@dataclass(frozen=True)
class AgentInfo:
    id: str
    org: str
    version: str
    disabled: bool
    has_secret: bool
    manifest: dict[str, Any]
    created_at: datetime
    updated_at: datetime

    @property
    def capabilities(self) -> list[str]:
        return list(self.manifest.get("capabilities", []))

    def to_json(self, versions: list[VersionInfo] | None = None) -> dict[str, Any]:
        """Schema `entities/agent`: never the secret, only whether one is set."""
        view: dict[str, Any] = {
            "id": self.id,
            "version": self.version,
            "disabled": self.disabled,
            "secret_set": self.has_secret,
            "created_at": utc_text(self.created_at),
            "updated_at": utc_text(self.updated_at),
            "manifest": self.manifest,
        }
        if versions is not None:
            view["versions"] = [v.to_json(self.version) for v in versions]
        return view


@dataclass(frozen=True)
class Registration:
    status: RegisterStatus
    agent: AgentInfo
    previous_version: str | None


def manifest_digest(manifest: dict[str, Any]) -> str:
    return hashlib.sha256(dumps(manifest, sort_keys=True).encode("utf-8")).hexdigest()


class AgentRegistry(Registry):
    # -- writes -------------------------------------------------------------

    def register(self, manifest: dict[str, Any]) -> Registration:
        """Register a new agent or a new version; the same version must keep its manifest."""
        for attempt in range(3):
            try:
                return self._register(manifest)
            except IntegrityError:
                # Two first registrations of one agent raced; the loser sees
                # the winner's row on the next attempt.
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def _register(self, manifest: dict[str, Any]) -> Registration:
        agent_id: str = manifest["id"]
        version: str = manifest["version"]
        digest = manifest_digest(manifest)
        now = utcnow()
        with self._store.write() as session:
            # The row lock serialises registrations of one agent (PostgreSQL;
            # SQLite writers are serialised by BEGIN IMMEDIATE already).
            agent = session.get(Agent, agent_id, with_for_update=True)
            if agent is None:
                agent = Agent(
                    id=agent_id,
                    org=agent_id.split("/", 1)[0],
                    current_version=version,
                    disabled=False,
                    created_at=now,
                    updated_at=now,
                    current_since=now,
                )
                session.add(agent)
                session.flush()
                session.add(self._version_row(agent_id, version, 1, manifest, digest, now))
                return Registration("created", self._info(session, agent), None)
            previous = agent.current_version
            existing = session.get(AgentVersion, (agent_id, version))
            if existing is not None:
                if existing.manifest_digest != digest:
                    raise Conflict(
                        f"{agent_id} version {version} is already registered with another manifest",
                        hint="a changed manifest needs a new version: "
                        "records describe (agent, version)",
                        details={"agent": agent_id, "version": version},
                    )
                if previous == version:
                    return Registration("unchanged", self._info(session, agent), previous)
                # An old version made current again is a new registration: the
                # records it had describe an agent that was since replaced, so
                # none applies until it is evaluated again (docs/integrity.md).
                agent.current_version = version
                agent.updated_at = now
                agent.current_since = now
                self._revoke_certificates(session, agent_id, previous, version)
                return Registration("reactivated", self._info(session, agent), previous)
            seq = (
                session.scalar(
                    select(func.max(AgentVersion.seq)).where(AgentVersion.agent_id == agent_id)
                )
                or 0
            ) + 1
            session.add(self._version_row(agent_id, version, seq, manifest, digest, now))
            agent.current_version = version
            agent.updated_at = now
            agent.current_since = now
            session.flush()
            self._revoke_certificates(session, agent_id, previous, version)
            return Registration("updated", self._info(session, agent), previous)

    def _revoke_certificates(
        self, session: Session, agent_id: str, previous: str, version: str
    ) -> None:
        # A certificate certifies the manifest that was current: another one registered
        # means it describes an agent that was replaced (docs/certificates.md).
        self._store.certificates.revoke_in(
            session,
            agent_id,
            f"{agent_id} registered version {version} in place of {previous}: "
            "the certified manifest is no longer the agent's",
        )

    @staticmethod
    def _version_row(
        agent_id: str, version: str, seq: int, manifest: dict[str, Any], digest: str, now: datetime
    ) -> AgentVersion:
        return AgentVersion(
            agent_id=agent_id,
            version=version,
            seq=seq,
            manifest=manifest,
            manifest_digest=digest,
            registered_at=now,
        )

    def set_disabled(self, agent_id: str, disabled: bool) -> AgentInfo:
        with self._store.write() as session:
            agent = self._agent(session, agent_id)
            if agent.disabled != disabled:
                agent.disabled = disabled
                agent.updated_at = utcnow()
            return self._info(session, agent)

    def set_secret(self, agent_id: str, secret: str) -> None:
        ciphertext = self._store.secret_box.encrypt(secret)
        with self._store.write() as session:
            self._agent(session, agent_id)
            row = session.get(AgentSecret, agent_id)
            if row is None:
                session.add(
                    AgentSecret(agent_id=agent_id, ciphertext=ciphertext, updated_at=utcnow())
                )
            else:
                row.ciphertext = ciphertext
                row.updated_at = utcnow()

    def clear_secret(self, agent_id: str) -> bool:
        with self._store.write() as session:
            self._agent(session, agent_id)
            row = session.get(AgentSecret, agent_id)
            if row is None:
                return False
            session.delete(row)
            return True

    # -- reads --------------------------------------------------------------

    def secret(self, agent_id: str) -> str | None:
        """The decrypted secret, for the executor only: never shown or logged."""
        with self._store.read() as session:
            row = session.get(AgentSecret, agent_id)
            ciphertext = None if row is None else row.ciphertext
        return None if ciphertext is None else self._store.secret_box.decrypt(ciphertext)

    def version_in(self, session: Session, agent_id: str, version: str) -> VersionInfo:
        """A registered version of the agent, read in `session`; NotFound otherwise."""
        row = session.get(AgentVersion, (agent_id, version))
        if row is None:
            raise NotFound(
                f"{agent_id} version {version} is not registered on this store",
                details={"agent": agent_id, "agent_version": version},
                hint="register the agent's manifest first (holon agents register FILE)",
            )
        return from_row(VersionInfo, row)

    def get(self, agent_id: str) -> AgentInfo:
        with self._store.read() as session:
            return self._info(session, self._agent(session, agent_id))

    def history(self, agent_id: str) -> list[VersionInfo]:
        with self._store.read() as session:
            self._agent(session, agent_id)
            rows = session.scalars(
                select(AgentVersion)
                .where(AgentVersion.agent_id == agent_id)
                .order_by(AgentVersion.seq)
            )
            return [from_row(VersionInfo, r) for r in rows]

    def manifest(self, agent_id: str, version: str | None = None) -> dict[str, Any]:
        with self._store.read() as session:
            agent = self._agent(session, agent_id)
            row = session.get(AgentVersion, (agent_id, version or agent.current_version))
            if row is None:
                raise NotFound(f"{agent_id} has no version {version}", details={"agent": agent_id})
            return row.manifest

    def list(
        self,
        *,
        org: str | None = None,
        capability: str | None = None,
        include_disabled: bool = False,
        cursor: str | None = None,
        limit: int = 100,
        keep: Callable[[AgentInfo], bool] | None = None,
        max_scan: int = 2000,
    ) -> Page[AgentInfo]:
        """A page of agents by id; `keep` filters before paginating (see `_list_kept`)."""
        check_limit(limit)
        after = decode_cursor(cursor)
        if keep is not None:
            return self._list_kept(
                org, capability, include_disabled, after, limit, keep, max(max_scan, limit + 1)
            )
        # Chunks of joined rows (_chunk), not two lookups an agent: a page of 1,000 agents
        # was 2,001 statements. Capability filtering reads the manifest JSON in Python:
        # the same code on SQLite and PostgreSQL.
        items: list[AgentInfo] = []
        position = after
        while True:
            size = max(_CHUNK, limit - len(items))
            chunk, last, exhausted = self._chunk(org, capability, include_disabled, position, size)
            for info in chunk:
                if len(items) == limit:  # a match past the page: there is a next one
                    return Page(items, encode_cursor(items[-1].id))
                items.append(info)
            if exhausted or last is None:
                return Page(items, None)
            position = last
            if len(items) == limit and capability is None:
                # Full, and rows are left: the next page starts after this one.
                more = self._chunk(org, None, include_disabled, position, 1)[0]
                return Page(items, encode_cursor(items[-1].id) if more else None)

    def _list_kept(
        self,
        org: str | None,
        capability: str | None,
        include_disabled: bool,
        after: str | None,
        limit: int,
        keep: Callable[[AgentInfo], bool],
        max_scan: int,
    ) -> Page[AgentInfo]:
        """Agents that `keep` accepts, paginated after filtering.

        `keep` is a predicate the caller brings (the gateway's "current, fresh
        record scores at least X"): freshness compares each suite the record
        was graded on with the active suite version and its grace period at
        the current time, which portable SQL over a JSON column cannot say.
        So rows are read in chunks, each in its own short session, and `keep`
        runs between sessions (it may read the store itself). A page holds
        `limit` matches unless no match is left (next_cursor None) or
        `max_scan` rows were read without filling it: then next_cursor points
        past the last row read, so the walk goes on and sees every match once.
        """
        items: list[AgentInfo] = []
        position = after
        scanned = 0
        while True:
            size = min(_CHUNK, max_scan - scanned)
            chunk, last, exhausted = self._chunk(org, capability, include_disabled, position, size)
            scanned += size
            for info in chunk:
                if not keep(info):
                    continue
                if len(items) == limit:
                    # One match more than the page holds: the page is full and
                    # not the last; the next one starts after its last item.
                    return Page(items, encode_cursor(items[-1].id))
                items.append(info)
            if exhausted or last is None:
                return Page(items, None)
            position = last
            if scanned >= max_scan:
                return Page(items, encode_cursor(position))

    def _chunk(
        self,
        org: str | None,
        capability: str | None,
        include_disabled: bool,
        after: str | None,
        size: int,
    ) -> tuple[builtins.list[AgentInfo], str | None, bool]:
        """Up to `size` agent rows after `after`: those claiming `capability`, the
        last id read, and whether the table ended within them."""
        # One statement per chunk: the current manifest and whether a secret
        # is set come joined, not as two lookups per agent (_info).
        query = (
            select(Agent, AgentVersion.manifest, AgentSecret.agent_id)
            .join(
                AgentVersion,
                and_(
                    AgentVersion.agent_id == Agent.id,
                    AgentVersion.version == Agent.current_version,
                ),
            )
            .outerjoin(AgentSecret, AgentSecret.agent_id == Agent.id)
            .order_by(Agent.id)
            .limit(size)
        )
        query = _agents_where(query, org, include_disabled, after)
        with self._store.read() as session:
            rows = session.execute(query).all()
        infos = [
            AgentInfo(
                id=agent.id,
                org=agent.org,
                version=agent.current_version,
                disabled=agent.disabled,
                has_secret=secret is not None,
                manifest=manifest,
                created_at=agent.created_at,
                updated_at=agent.updated_at,
            )
            for agent, manifest, secret in rows
        ]
        kept = [i for i in infos if capability is None or capability in i.capabilities]
        return kept, (infos[-1].id if infos else None), len(rows) < size

    # -- helpers ------------------------------------------------------------

    @staticmethod
    def _agent(session: Session, agent_id: str) -> Agent:
        agent = session.get(Agent, agent_id)
        if agent is None:
            raise NotFound(f"no agent {agent_id!r} is registered", details={"agent": agent_id})
        return agent

    @staticmethod
    def _info(session: Session, agent: Agent) -> AgentInfo:
        row = session.get(AgentVersion, (agent.id, agent.current_version))
        assert row is not None, "an agent always has its current version"
        has_secret = session.get(AgentSecret, agent.id) is not None
        return AgentInfo(
            id=agent.id,
            org=agent.org,
            version=agent.current_version,
            disabled=agent.disabled,
            has_secret=has_secret,
            manifest=row.manifest,
            created_at=agent.created_at,
            updated_at=agent.updated_at,
        )


_Q = TypeVar("_Q", bound=Select[Any])


def _agents_where(query: _Q, org: str | None, include_disabled: bool, after: str | None) -> _Q:
    """The listing's filters: one org, enabled agents only, after a cursor."""
    if org is not None:
        query = query.where(Agent.org == org)
    if not include_disabled:
        query = query.where(Agent.disabled.is_(False))
    if after is not None:
        query = query.where(Agent.id > after)
    return query
