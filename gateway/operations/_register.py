"""The operations that write an agent: its registration and its bearer secret (see _declare.py)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway._roles import ORG
from gateway.operations._declare import (
    Bearer,
    Cli,
    Lines,
    Operation,
    created_if_new,
    document_field,
    param,
    view,
)
from gateway.operations._narrow import own_agent
from gateway.operations._registry import AgentRef, agent_id
from schema.errors import Refused, UsageError
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService

log = logging.getLogger(__name__)

# -- agents.register ---------------------------------------------------------------


@dataclass(frozen=True)
class Registration:
    # The CLI reads it from FILE.
    manifest: JSONObject = document_field(
        "the agent's manifest (schema/agent.schema.json)", {"$ref": "agent.schema.json"}
    )


def _registrable(who: Bearer, asked: Registration) -> Registration:
    """An org registers its own agents; an in-process agent only on the store."""
    agent = str(asked.manifest.get("id", ""))
    if "/" in agent:
        who.require_agent(agent)
    endpoint = str(asked.manifest.get("endpoint", ""))
    if endpoint.startswith("asgi:") or asked.manifest.get("protocol") == "asgi":
        # In-process agents import code into the gateway: store (CLI) only.
        raise Refused(
            "asgi: agents run inside the gateway and can only be registered on the store",
            hint="an operator registers it with `holon agents register FILE` on the store",
        )
    return asked


def _register(service: StoreService, asked: Registration) -> JSONObject:
    from agents import manifest_from_dict
    from gateway.service import agent_view

    # Validated again here: whatever reaches the store passed the schema, whichever
    # door it came through (the CLI read it from its file, naming the file's lines).
    parsed = manifest_from_dict(asked.manifest, "<request>")
    registration = service.store.agents.register(parsed.to_json())
    certified = service.store.suites.certified_capabilities()
    warnings = [
        {
            "code": "unverified_capability",
            "capability": capability,
            "message": f"no installed suite certifies {capability}: the claim stays "
            "unverifiable, its record's eval_score stays null and "
            "min_eval_score mandates deny it",
        }
        for capability in parsed.capabilities
        if capability not in certified
    ]
    log.info("agent %s %s at version %s", parsed.id, registration.status, parsed.version)
    return {
        "status": registration.status,
        "agent": agent_view(registration.agent),
        "previous_version": registration.previous_version,
        "warnings": warnings,
    }


def _registered(view: JSONObject) -> list[str]:
    agent, previous = view["agent"], view["previous_version"]
    name, version = agent["id"], agent["version"]
    words = {
        "created": f"registered {name} {version}",
        "updated": f"updated {name} from {previous} to {version}",
        "unchanged": f"{name} {version} is already registered, unchanged",
        "reactivated": f"{name} is back at version {version} (was {previous})",
    }
    return [words[view["status"]]]


AGENTS_REGISTER = Operation(
    name="agents.register",
    method="POST",
    path="/v1/agents",
    roles=ORG,
    request=Registration,
    summary="register or update an agent",
    run=_register,
    response=view("agent-registration"),
    statuses=(404, 409, 413, 422),
    status=created_if_new,
    narrow=_registrable,
    body_name="the manifest",
    large_body=True,  # a manifest may be as large as the gateway admits (HOLON_MAX_BODY_BYTES)
    cli=Cli(
        help="register an agent, or a new version of one, from a manifest",
        description="Register an agent from a YAML or JSON manifest. Re-registering with a "
        "new version updates it and keeps the history; a version keeps its manifest.",
        render=Lines(
            lines=_registered, warnings=lambda view: [w["message"] for w in view["warnings"]]
        ),
    ),
)


# -- agents.secret.set, agents.secret.clear ------------------------------------------


def _secret_text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise UsageError('the body must be {"secret": "<the agent\'s bearer secret>"}')
    return value


@dataclass(frozen=True)
class AgentSecret(AgentRef):
    secret: str = param(
        required=True,
        help="the agent's bearer secret: printable ASCII, no spaces",
        where="body",
        flag="",  # the CLI reads it from --from-env VAR or stdin, never from a flag
        check=_secret_text,
    )


def _set_secret(service: StoreService, asked: AgentSecret) -> JSONObject:
    from agents import secret_problem

    problem = secret_problem(asked.secret)
    if problem is not None:
        raise UsageError(problem)
    service.store.agents.set_secret(asked.agent, asked.secret)
    return {"agent": asked.agent, "secret_set": True}


AGENTS_SECRET_SET = Operation(
    name="agents.secret.set",
    method="PUT",
    path="/v1/agents/{org}/{name}/secret",
    roles=ORG,
    request=AgentSecret,
    summary="set the agent's bearer secret (write-only)",
    run=_set_secret,
    response=view("agent-secret"),
    statuses=(404, 413),
    narrow=own_agent,
    max_body_bytes=64 * 1024,
    cli=Cli(
        help="set the secret sent as 'Authorization: Bearer' (read from stdin or a prompt)",
        description="Store the agent's bearer secret, encrypted. It is never shown again. "
        "The secret is read from --from-env VAR, else from standard input "
        "(a hidden prompt on a terminal).",
        render=Lines(
            lambda v: [f"secret set for {v['agent']} (stored encrypted; it is never shown)"]
        ),
    ),
)


def _clear_secret(service: StoreService, ref: AgentRef) -> JSONObject:
    cleared = service.store.agents.clear_secret(ref.agent)
    return {"agent": ref.agent, "secret_set": False, "cleared": cleared}


AGENTS_SECRET_CLEAR = Operation(
    name="agents.secret.clear",
    method="DELETE",
    path="/v1/agents/{org}/{name}/secret",
    roles=ORG,
    request=AgentRef,
    summary="clear the agent's bearer secret",
    run=_clear_secret,
    response=view("agent-secret"),
    statuses=(404,),
    narrow=own_agent,
    cli=Cli(
        help="remove the secret",
        render=Lines(
            lambda v: [f"secret {'removed' if v['cleared'] else 'was not set'} for {v['agent']}"],
            # The CLI's answer has always said `removed`; the API's `cleared`.
            json=lambda v: {"agent": v["agent"], "secret_set": False, "removed": v["cleared"]},
        ),
    ),
)

__all__ = [
    "AGENTS_REGISTER",
    "AGENTS_SECRET_CLEAR",
    "AGENTS_SECRET_SET",
    "AgentSecret",
    "Registration",
    "agent_id",
]
