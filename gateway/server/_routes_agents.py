"""Routes over agents, suites and records."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from agents import manifest_from_dict
from evals import author_record
from evals.suites import load_installed
from gateway.operations import (
    AGENTS_DISABLE,
    AGENTS_ENABLE,
    AGENTS_LIST,
    AGENTS_SHOW,
    SUITES_LIST,
    SUITES_SHOW,
    suites_for,
)
from gateway.operations import MAX_VERSION as MAX_VERSION  # the console's suite pages
from gateway.server._auth import Bearer
from gateway.server._http import body_object, json_response, query_int, read_json
from gateway.server._operations import endpoint
from gateway.server._service import Endpoint, Service
from schema.errors import HolonError, Refused, UsageError

ORG = frozenset({"operator", "org"})
OPERATOR = frozenset({"operator"})


def _agent_id(request: Request) -> str:
    return f"{request.path_params['org']}/{request.path_params['name']}"


async def register_agent(request: Request, who: Bearer, svc: Service) -> Response:
    manifest = body_object(await read_json(request, svc.max_body_bytes), "the manifest")
    agent_id = str(manifest.get("id", ""))
    if "/" in agent_id:
        who.require_agent(agent_id)
    endpoint = str(manifest.get("endpoint", ""))
    if endpoint.startswith("asgi:") or manifest.get("protocol") == "asgi":
        # In-process agents import code into the gateway: store (CLI) only.
        raise Refused(
            "asgi: agents run inside the gateway and can only be registered on the store",
            hint="an operator registers it with `holon agents register FILE` on the store",
        )
    # The manifest is validated before its endpoint is looked up: the network
    # check parses the URL, and a port of 99999 or a host of "[::1" is the
    # manifest's error (422 at its JSON path), not the network's.
    valid = await svc.run(manifest_from_dict, manifest, "<request>")
    await svc.network.check_url(valid.endpoint, svc.calls.executor.resolve)
    view = await svc.run(lambda: svc.client.register_agent(manifest, source="<request>"))
    # A reactivated old version needs an eval too: its old records no longer apply.
    if svc.eval_on_register and view["status"] in ("created", "updated", "reactivated"):
        view.update(await svc.run(_queue_eval, svc, view["agent"]["id"]))
    return json_response(view, 201 if view["status"] == "created" else 200)


def _queue_eval(svc: Service, agent_id: str) -> dict[str, Any]:
    """Start the new version's full eval (HOLON_EVAL_ON_REGISTER); the workers run it."""
    try:
        plan = svc.client.evals.plan(
            agent_id,
            suites=None,
            repetitions=None,
            concurrency=16,
            retries=2,
            pace_s=0.0,
            max_cost=None,
        )
        info = svc.client.evals.begin(plan)
    except HolonError as exc:
        return {"queued_eval": None, "queued_eval_error": exc.to_body()["error"]}
    return {"queued_eval": info.id}


async def set_secret(request: Request, who: Bearer, svc: Service) -> Response:
    agent_id = _agent_id(request)
    who.require_agent(agent_id)
    body = body_object(await read_json(request, 64 * 1024), "the body")
    secret = body.get("secret")
    if not isinstance(secret, str):
        raise UsageError('the body must be {"secret": "<the agent\'s bearer secret>"}')
    await svc.run(svc.client.set_agent_secret, agent_id, secret)
    return json_response({"agent": agent_id, "secret_set": True})


async def clear_secret(request: Request, who: Bearer, svc: Service) -> Response:
    agent_id = _agent_id(request)
    who.require_agent(agent_id)
    cleared = await svc.run(svc.client.clear_agent_secret, agent_id)
    return json_response({"agent": agent_id, "secret_set": False, "cleared": cleared})


def _suites_for(who: Bearer, svc: Service, views: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Suite views as `who` may read them (the console's suite pages; suites.list and
    suites.show present theirs with the same rule)."""
    return suites_for(who, svc.client, views)


def _version(request: Request) -> int | None:
    if request.query_params.get("version") is None:
        return None
    return query_int(request, "version", 1, 1, MAX_VERSION)


async def suite_cases(request: Request, who: Bearer, svc: Service) -> Response:
    """Public cases in full; the holdout as counts only."""
    suite_id = request.path_params["suite"]
    version = _version(request)

    def load() -> dict[str, Any]:
        suite = load_installed(svc.store, suite_id, svc.client.home, version)
        return {
            "id": suite.id,
            "version": suite.version,
            "capability": suite.capability,
            "public": [
                {"id": c.id, "tags": list(c.tags), **{k: v for k, v in c.raw.items() if k != "id"}}
                for c in suite.public
            ],
            "holdout": {"cases": suite.holdout_count},
        }

    return json_response(await svc.run(load))


async def pull_suite(request: Request, who: Bearer, svc: Service) -> Response:
    suite_id = request.path_params["suite"]
    return json_response(await svc.run(svc.client.pull_suite, suite_id, _version(request)))


def record_view(record: dict[str, Any], who: Bearer) -> dict[str, Any]:
    """The agent record as `who` may see it: holdout epochs are the operator's, and each
    holdout split is its rate and interval (docs/integrity.md)."""
    if who.is_operator:
        return record
    return author_record(record)


async def get_record(request: Request, who: Bearer, svc: Service) -> Response:
    agent_id = _agent_id(request)
    if who.kind == "org":
        who.require_agent(agent_id)
    record = await svc.run(svc.client.evals.record, agent_id)
    return json_response(record_view(record, who))


ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/agents",
        ORG,
        register_agent,
        "register or update an agent",
        request={"$ref": "agent.schema.json"},
        statuses=(404, 409, 413, 422),
    ),
    endpoint(AGENTS_LIST),
    endpoint(AGENTS_SHOW),
    endpoint(AGENTS_DISABLE),
    endpoint(AGENTS_ENABLE),
    Endpoint(
        "PUT",
        "/v1/agents/{org}/{name}/secret",
        ORG,
        set_secret,
        "set the agent's bearer secret (write-only)",
        request={
            "type": "object",
            "required": ["secret"],
            "properties": {"secret": {"type": "string"}},
        },
        statuses=(404, 413),
    ),
    Endpoint(
        "DELETE",
        "/v1/agents/{org}/{name}/secret",
        ORG,
        clear_secret,
        "clear the agent's bearer secret",
        statuses=(404,),
    ),
    endpoint(SUITES_LIST),
    endpoint(SUITES_SHOW),
    Endpoint(
        "GET",
        "/v1/suites/{suite}/cases",
        "any",
        suite_cases,
        "public cases in full, the holdout as counts only",
        query=(("version", "an installed version (default: the active one)"),),
        statuses=(404,),
    ),
    Endpoint(
        "GET",
        "/v1/suites/{suite}/files",
        "any",
        pull_suite,
        "the suite's public files (holon suites pull)",
        query=(("version", "an installed version (default: the active one)"),),
        statuses=(404,),
    ),
    Endpoint(
        "GET",
        "/v1/records/{org}/{name}",
        "any",
        get_record,
        "the agent's current record",
        statuses=(404,),
    ),
]
