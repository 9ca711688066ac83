"""`GET /v1/models` of the OpenAI front door: what a caller may name as a `model`.

A caller sees the capabilities its unexpired mandates name (as MCP's
`tools/list` shows them) and, under each, the agents those mandates allow
now, as routing would rank them (`LiveCalls.callable_agents`: a read, no
ledger row). Nothing else: another org's capability or agent that no
mandate of the caller's allows is not listed, as `/invoke` would deny it.

Model ids (docs/gateway.md, OpenAI front door):

- a capability, e.g. `ticket.classify`: a routed call;
- an agent, `org/name`, when it claims one capability: a call to it;
- `org/name:capability` for an agent claiming several (then `org/name`
  alone does not say which, and is refused).

Each entry has OpenAI's keys (`id`, `object`, `created`, `owned_by`) and
holon's under `holon` (the suite of a capability; an agent's version,
capability, `eval_score` and the certificate its mandate accepted), which
the SDKs keep as extra fields.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.live import CallableAgent
from gateway.server._routes_calls import mandated_capabilities
from gateway.web import Bearer, Shared, json_response

__all__ = ["MODELS_SCHEMA", "agent_model", "list_models"]

MODELS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "OpenAI's model list: the caller's capabilities and the agents it may call",
    "required": ["object", "data"],
    "properties": {
        "object": {"const": "list"},
        "data": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id", "object", "created", "owned_by"],
                "properties": {
                    "id": {"type": "string"},
                    "object": {"const": "model"},
                    "created": {"type": "integer"},
                    "owned_by": {"type": "string"},
                    "holon": {"type": "object"},
                },
            },
        },
    },
}


def agent_model(agent_id: str, claimed: list[str], capability: str) -> str:
    """The model id of `agent_id` called for `capability`."""
    return agent_id if claimed == [capability] else f"{agent_id}:{capability}"


async def list_models(request: Request, who: Bearer, shared: Shared) -> Response:
    names = await mandated_capabilities(who, shared)
    data = await shared.run(_listing, shared, who.name, names)
    return json_response({"object": "list", "data": data})


def _listing(shared: Shared, caller: str, names: list[str]) -> list[dict[str, Any]]:
    """Blocking (store reads through the lookup cache): run in a worker thread."""
    capabilities: list[dict[str, Any]] = []
    agents: dict[str, dict[str, Any]] = {}
    for name in names:
        contract = shared.calls.lookups.contract(name)
        allowed = shared.calls.callable_agents(caller, name)
        created = min((_created(found) for found in allowed), default=0)
        capabilities.append(
            {
                "id": name,
                "object": "model",
                "created": created,
                "owned_by": "holon",
                "holon": {
                    "kind": "capability",
                    "suite": None if contract is None else contract.key,
                    "agents": len(allowed),
                },
            }
        )
        for found in allowed:
            agent = found.agent
            model = agent_model(agent.id, agent.capabilities, name)
            agents[model] = {
                "id": model,
                "object": "model",
                "created": _created(found),
                "owned_by": agent.org,
                "holon": {
                    "kind": "agent",
                    "agent": agent.id,
                    "agent_version": agent.version,
                    "capability": name,
                    "eval_score": found.eval_score,
                    "certificate": found.certificate_id,
                },
            }
    return capabilities + [agents[model] for model in sorted(agents)]


def _created(found: CallableAgent) -> int:
    return int(found.agent.created_at.timestamp())
