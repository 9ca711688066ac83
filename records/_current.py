"""Agents' current records with their staleness: one agent's, or many agents' at once.

One rule for both (GATEWAY.md, "Records and staleness"): a record graded on a
suite version that is no longer active stays valid for the active version's
grace period after its activation, then is stale; a rotated holdout epoch
never makes it stale; an identity probe that found another id or version
after the eval started makes it stale (records._identities). The many-agent
read (the console's overview) costs a few queries however many agents, where
one read per agent cost three or more each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, tuple_

from records._identities import IdentityInfo, _info
from records._models import Agent, AgentIdentityRow, AgentRecord, AgentVersion
from records._suites import InstalledSuite
from records._types import utc_text
from schema.errors import NotFound

if TYPE_CHECKING:
    from records._store import Store

__all__ = ["current_records", "with_staleness"]

_CHUNK = 500  # ids in one IN (...) list


def with_staleness(
    record: dict[str, Any],
    eval_created_at: datetime,
    identity: IdentityInfo | None,
    active_suite: Callable[[str], InstalledSuite],
    now: datetime,
) -> dict[str, Any]:
    """`record` with `stale` and `stale_reasons` as of `now`."""
    reasons: list[str] = []
    # A probe that found another agent at the endpoint since this eval started.
    mismatch = None if identity is None else identity.stale_reason(eval_created_at)
    if mismatch is not None:
        reasons.append(mismatch)
    for suite_id, graded in record.get("suites", {}).items():
        try:
            active = active_suite(suite_id)
        except NotFound:
            reasons.append(f"suite {suite_id} is no longer installed")
            continue
        if active.version == graded.get("version"):
            continue
        activated = active.activated_at or active.installed_at
        until = activated + timedelta(days=active.grace_days)
        if now >= until:
            reasons.append(
                f"graded on {suite_id} v{graded.get('version')}; v{active.version} is active "
                f"and its {active.grace_days}-day grace period ended "
                f"{utc_text(until)}"
            )
    return {**record, "stale": bool(reasons), "stale_reasons": reasons}


def current_records(
    store: Store, agents: Sequence[tuple[str, str]], now: datetime
) -> dict[str, dict[str, Any]]:
    """The current record, with staleness, of each (agent id, its current version) that
    has one, by agent id: the record `EvalRegistry.current_record_with_staleness` reads
    for each (only evals started since the version last became current count)."""
    wanted = dict(agents)
    rows: dict[str, AgentRecord] = {}
    identities: dict[tuple[str, str], IdentityInfo] = {}
    ids = list(wanted)
    with store.read() as session:
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            # Only evals started since the version last became current count (for the
            # current version; any of another version's): records._evals._current_since.
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
                select(AgentRecord)
                .where(AgentRecord.agent_id.in_(chunk))
                .order_by(AgentRecord.eval_created_at.desc(), AgentRecord.eval_id.desc())
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
        agent_id: with_staleness(
            row.record,
            row.eval_created_at,
            identities.get((agent_id, row.agent_version)),
            active_suite,
            now,
        )
        for agent_id, row in rows.items()
    }
