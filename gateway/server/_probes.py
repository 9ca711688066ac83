"""Periodic identity probes of every enabled agent (docs/agents.md, "Identity").

A probe asks the agent who it is; an answer naming another id or version
than the registered one means the record describes a different agent: the
mismatch is kept in the store (`store.identities`), which makes the current
record stale at once for every gateway process (mandates deny `eval_stale`
until the agent is evaluated again; records._identities says why a later
right answer does not clear it), and is logged and shown in /metrics. The
claimed capabilities the answer does not advertise are kept too, and live
calls for them are refused (`capability_not_advertised`). Probes run on a
jittered schedule whatever else happens, so an agent cannot read a probe as
"an eval is coming".
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import Literal

from agents import Executor
from gateway._loops import Loop
from gateway.web import Shared
from records import AgentInfo
from schema.errors import HolonError, ManifestError

log = logging.getLogger(__name__)

__all__ = ["PROBE_SLACK_S", "ProbeResult", "probe_agent", "probe_forever", "probe_loop"]

ProbeResult = Literal["ok", "mismatch", "not_advertised", "unreachable", "refused"]

# Beyond its interval, how long the probe loop may go without probing anything before
# it is not ready (/readyz): room for one slow agent's probe and the agents' listing.
PROBE_SLACK_S = 600.0


def probe_loop(interval_s: float) -> Loop:
    """The probe loop's health, as /readyz and /metrics show it."""
    return Loop("probes", stale_after_s=max(3 * interval_s, interval_s + PROBE_SLACK_S))


async def probe_agent(shared: Shared, executor: Executor, agent: AgentInfo) -> ProbeResult:
    secret = await shared.run(shared.calls.lookups.secret, agent.id)
    try:
        # A manifest stored before a rule it breaks (an endpoint agents._endpoint refuses)
        # is refused like the call it describes, not an exception out of the loop.
        manifest = shared.calls.lookups.manifest(agent.id, agent.version, agent.manifest)
        identity = await executor.identify(manifest, secret=secret)
    except HolonError as exc:
        log.info("identity probe of %s: %s", agent.id, exc)
        refused = exc.http_status == 409 or isinstance(exc, ManifestError)
        return "refused" if refused else "unreachable"
    check = identity.compare(manifest)
    try:
        await shared.run(
            lambda: shared.store.identities.observe(agent.id, agent.version, **check.observation())
        )
    except HolonError as exc:  # the store is away: the next probe keeps it
        log.warning("identity probe of %s not kept: %s", agent.id, exc)
    if check.mismatch is not None:
        log.warning("identity probe: %s %s", agent.id, check.mismatch)
        return "mismatch"
    if check.not_advertised:
        log.warning(
            "identity probe: %s does not advertise %s", agent.id, ", ".join(check.not_advertised)
        )
        return "not_advertised"
    return "ok"


async def probe_forever(shared: Shared, executor: Executor, interval_s: float, loop: Loop) -> None:
    """Probe every enabled agent about every `interval_s` (spread out, with jitter).

    Each agent probed, and each pass, is a success of `loop`; an agent whose
    probe raises (anything: an endpoint the address parser chokes on, a bug)
    is its failure, and the next agent is probed all the same.
    """
    rng = random.Random()
    while True:
        await asyncio.sleep(interval_s * rng.uniform(0.5, 1.0))
        try:
            agents = await shared.run(_enabled_agents, shared)
        except Exception as exc:  # the store is away, say: the next pass tries again
            loop.failed("the list of agents to probe", exc)
            continue
        for agent in agents:
            try:
                result = await probe_agent(shared, executor, agent)
                shared.metrics.probe(agent.id, result)
            except Exception as exc:
                loop.failed(f"agent {agent.id}", exc)
            else:
                loop.ok()
            await asyncio.sleep(rng.uniform(0, interval_s / (2 * max(len(agents), 1))))
        loop.ok()


def _enabled_agents(shared: Shared) -> list[AgentInfo]:
    out: list[AgentInfo] = []
    cursor = None
    while True:
        page = shared.store.agents.list(cursor=cursor, limit=500)
        out += page.items
        if page.next_cursor is None:
            return out
        cursor = page.next_cursor
