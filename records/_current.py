"""Agents' current records with their staleness: one agent's, or many agents' at once.

One rule for both (docs/architecture.md, "Entities"): a record graded on a
suite version that is no longer active stays valid for the active version's
grace period after its activation, then is stale; a rotated holdout epoch
never makes it stale; an identity probe that found another id or version
after the eval started makes it stale (records._identities). The many-agent
read (the console's overview) costs a few queries however many agents, where
one read per agent cost three or more each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select, tuple_
from sqlalchemy.orm import Session

from records._agent_record import AgentRecord, RecordCanaries
from records._canaries import record_canaries
from records._identities import IdentityInfo, _info
from records._models import (
    Agent,
    AgentIdentityRow,
    AgentRecordRow,
    AgentVersion,
    CanaryStateRow,
)
from records._registry import Registry
from records._suites import InstalledSuite
from records._types import utc_text, utcnow
from schema.errors import NotFound

if TYPE_CHECKING:
    from records._store import Store

__all__ = ["CurrentRecords", "current_records", "with_staleness"]

_CHUNK = 500  # ids in one IN (...) list


def with_staleness(
    record: AgentRecord,
    eval_created_at: datetime,
    identity: IdentityInfo | None,
    active_suite: Callable[[str], InstalledSuite],
    now: datetime,
) -> AgentRecord:
    """`record` with `stale` and `stale_reasons` as of `now`."""
    reasons: list[str] = []
    # A probe that found another agent at the endpoint since this eval started.
    mismatch = None if identity is None else identity.stale_reason(eval_created_at)
    if mismatch is not None:
        reasons.append(mismatch)
    for suite_id, graded in record.suites.items():
        try:
            active = active_suite(suite_id)
        except NotFound:
            reasons.append(f"suite {suite_id} is no longer installed")
            continue
        if active.version == graded.version:
            continue
        activated = active.activated_at or active.installed_at
        until = activated + timedelta(days=active.grace_days)
        if now >= until:
            reasons.append(
                f"graded on {suite_id} v{graded.version}; v{active.version} is active "
                f"and its {active.grace_days}-day grace period ended "
                f"{utc_text(until)}"
            )
    return replace(record, stale=bool(reasons), stale_reasons=tuple(reasons))


def current_records(
    store: Store, agents: Sequence[tuple[str, str]], now: datetime
) -> dict[str, AgentRecord]:
    """The current record, with staleness, of each (agent id, its current version) that
    has one, by agent id: the record `EvalRegistry.current_record_with_staleness` reads
    for each (only evals started since the version last became current count)."""
    wanted = dict(agents)
    rows: dict[str, AgentRecordRow] = {}
    identities: dict[tuple[str, str], IdentityInfo] = {}
    canaries: dict[str, dict[str, RecordCanaries]] = {}
    ids = list(wanted)
    with store.read() as session:
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            # Only evals started since the version last became current count (for the
            # current version; any of another version's): CurrentRecords._current_since (below).
            since: dict[str, datetime | None] = {}
            registered: list[tuple[str, str]] = []
            for agent in session.scalars(select(Agent).where(Agent.id.in_(chunk))):
                if agent.current_version != wanted[agent.id]:
                    since[agent.id] = None
                elif agent.current_since is not None:
                    since[agent.id] = agent.current_since
                else:
                    registered.append((agent.id, wanted[agent.id]))
            if registered:
                for version in session.scalars(
                    select(AgentVersion).where(
                        tuple_(AgentVersion.agent_id, AgentVersion.version).in_(registered)
                    )
                ):
                    since[version.agent_id] = version.registered_at
            query = (
                select(AgentRecordRow)
                .where(AgentRecordRow.agent_id.in_(chunk))
                .order_by(AgentRecordRow.eval_created_at.desc(), AgentRecordRow.eval_id.desc())
            )
            for row in session.scalars(query):
                if row.agent_id in rows or row.agent_version != wanted[row.agent_id]:
                    continue
                floor = since.get(row.agent_id)
                if floor is None or row.eval_created_at >= floor:
                    rows[row.agent_id] = row
            pairs = [(a, wanted[a]) for a in chunk if a in rows]
            if pairs:
                for found in session.scalars(
                    select(AgentIdentityRow).where(
                        tuple_(AgentIdentityRow.agent_id, AgentIdentityRow.agent_version).in_(pairs)
                    )
                ):
                    identities[(found.agent_id, found.agent_version)] = _info(found)
                for state in session.scalars(
                    select(CanaryStateRow).where(
                        tuple_(CanaryStateRow.agent_id, CanaryStateRow.agent_version).in_(pairs)
                    )
                ):
                    if state.record_eval_id == rows[state.agent_id].eval_id:
                        canaries.setdefault(state.agent_id, {})[state.capability] = record_canaries(
                            state
                        )
    suites: dict[str, InstalledSuite | NotFound] = {}

    def active_suite(suite_id: str) -> InstalledSuite:
        if suite_id not in suites:
            try:
                suites[suite_id] = store.suites.get(suite_id)
            except NotFound as exc:
                suites[suite_id] = exc
        found = suites[suite_id]
        if isinstance(found, NotFound):
            raise found
        return found

    return {
        agent_id: replace(
            with_staleness(
                AgentRecord.from_json(row.record),
                row.eval_created_at,
                identities.get((agent_id, row.agent_version)),
                active_suite,
                now,
            ),
            canaries=canaries.get(agent_id),
        )
        for agent_id, row in rows.items()
    }


class CurrentRecords(Registry):
    """The eval registry's reads of agents' records (`store.evals.current_record` and its
    kin): kept here, beside the rule they apply, and inherited by `EvalRegistry`."""

    def current_record(self, agent_id: str, version: str | None = None) -> AgentRecord | None:
        """The record of the eval that started last (for the version, or any), as written:
        without its staleness (`stale_reasons` None).

        For the agent's current version, only evals started since that version
        last became current count: re-registering an old version never brings
        its old record back (docs/integrity.md, "Records follow registrations").
        """
        row = self._current_row(agent_id, version)
        return None if row is None else AgentRecord.from_json(row.record)

    def _current_row(self, agent_id: str, version: str | None) -> AgentRecordRow | None:
        with self._store.read() as session:
            query = select(AgentRecordRow).where(AgentRecordRow.agent_id == agent_id)
            if version is not None:
                query = query.where(AgentRecordRow.agent_version == version)
                since = self._current_since(session, agent_id, version)
                if since is not None:
                    query = query.where(AgentRecordRow.eval_created_at >= since)
            return session.scalars(
                query.order_by(
                    AgentRecordRow.eval_created_at.desc(), AgentRecordRow.eval_id.desc()
                ).limit(1)
            ).first()

    @staticmethod
    def _current_since(session: Session, agent_id: str, version: str) -> datetime | None:
        agent = session.get(Agent, agent_id)
        if agent is None or agent.current_version != version:
            return None
        if agent.current_since is not None:
            return agent.current_since
        row = session.get(AgentVersion, (agent_id, version))
        return None if row is None else row.registered_at

    def current_record_with_staleness(
        self,
        agent_id: str,
        version: str,
        *,
        now: datetime | None = None,
        holdout_evals: bool = True,
    ) -> AgentRecord | None:
        """The current record with `stale` computed now (docs/architecture.md, "Entities").

        A record graded on a suite version that is no longer active stays
        valid for the active version's grace period after its activation,
        then is stale. A rotated holdout epoch never makes a record stale.
        An identity probe that found another id or version after the eval
        started makes it stale (records._identities).
        `holdout_evals` (the lower-bound gate's k per suite) costs one more
        query; a caller that reads only the score and staleness leaves it out.
        """
        row = self._current_row(agent_id, version)
        if row is None:
            return None
        record = with_staleness(
            AgentRecord.from_json(row.record),
            row.eval_created_at,
            self._store.identities.get(agent_id, version),
            self._store.suites.get,
            now or utcnow(),
        )
        canaries = self._store.canaries.of_record(agent_id, version, record.eval_id)
        if canaries:
            record = replace(record, canaries=canaries)
        if holdout_evals:
            # The k of the lower-bound gate (docs/integrity.md): every org's holdout-
            # revealing evals on each suite the record was graded on, counted now.
            revealed = self._store.exposure.revealed(record.suites)
            record = replace(record, holdout_evals=revealed)
        return record

    def current_records_with_staleness(
        self, agents: Sequence[tuple[str, str]], *, now: datetime | None = None
    ) -> dict[str, AgentRecord]:
        """Many agents' current records at once, by agent id (records._current): for each
        (agent id, version), what `current_record_with_staleness` reads without
        `holdout_evals`, in a few queries however many agents."""
        return current_records(self._store, agents, now or utcnow())

    def record_history(self, agent_id: str) -> list[AgentRecord]:
        """Every record of the agent, newest eval first, as written (without staleness)."""
        with self._store.read() as session:
            rows = session.scalars(
                select(AgentRecordRow)
                .where(AgentRecordRow.agent_id == agent_id)
                .order_by(AgentRecordRow.eval_created_at.desc())
            )
            return [AgentRecord.from_json(r.record) for r in rows]
