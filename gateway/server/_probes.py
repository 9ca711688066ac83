"""Periodic identity probes of every enabled agent (GATEWAY.md, identity).

A probe asks the agent who it is; an answer naming another version than the
registered one means the record describes a different agent, so the
mismatch is logged and shown in /metrics. Probes run on a jittered schedule
whatever else happens, so an agent cannot read a probe as "an eval is
coming".
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Literal

from agents import Executor
from gateway.server._service import Service
from records import AgentInfo
from schema.errors import HolonError

log = logging.getLogger(__name__)

__all__ = ["ProbeResult", "probe_agent", "probe_forever"]

ProbeResult = Literal["ok", "mismatch", "unreachable", "refused"]


async def probe_agent(svc: Service, executor: Executor, agent: AgentInfo) -> ProbeResult:
    manifest = svc.calls.lookups.manifest(agent.id, agent.version, agent.manifest)
    secret = await svc.run(svc.calls.lookups.secret, agent.id)
    try:
        identity = await executor.identify(manifest, secret=secret)
    except HolonError as exc:
        log.info("identity probe of %s: %s", agent.id, exc)
        return "refused" if exc.http_status == 409 else "unreachable"
    if identity.version != agent.version:
        log.warning(
            "identity probe: %s answers as version %s, but %s is registered",
            agent.id,
            identity.version,
            agent.version,
        )
        return "mismatch"
    return "ok"


async def probe_forever(svc: Service, executor: Executor, interval_s: float) -> None:
    """Probe every enabled agent about every `interval_s` (spread out, with jitter)."""
    rng = random.Random()
    while True:
        await asyncio.sleep(interval_s * rng.uniform(0.5, 1.0))
        try:
            agents = await svc.run(_enabled_agents, svc)
        except HolonError as exc:
            log.warning("identity probes skipped: %s", exc)
            continue
        for agent in agents:
            result = await probe_agent(svc, executor, agent)
            svc.metrics.probe(agent.id, result)
            await asyncio.sleep(rng.uniform(0, interval_s / (2 * max(len(agents), 1))))


def _enabled_agents(svc: Service) -> list[AgentInfo]:
    out: list[AgentInfo] = []
    cursor = None
    while True:
        page = svc.store.agents.list(cursor=cursor, limit=500)
        out += page.items
        if page.next_cursor is None:
            return out
        cursor = page.next_cursor
