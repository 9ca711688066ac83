"""Routes over agents, suites and records."""

from __future__ import annotations

from typing import Any

from agents import manifest_from_dict
from gateway import operations
from gateway.operations import Registration
from gateway.service import EvalOptions
from gateway.web import Shared, endpoint
from schema.errors import HolonError


async def _reachable(asked: Registration, shared: Shared) -> None:
    """The gateway's network policy admits the agent's endpoint (the store's CLI is not
    limited). The manifest is validated before its endpoint is looked up: the network
    check parses the URL, and a port of 99999 or a host of "[::1" is the manifest's
    error (422 at its JSON path), not the network's."""
    valid = await shared.run(manifest_from_dict, asked.manifest, "<request>")
    await shared.network.check_url(valid.endpoint, shared.calls.executor.resolve)


def _queued(shared: Shared, _: Registration, view: dict[str, Any]) -> dict[str, Any]:
    """A new (or reactivated) version's full eval, with HOLON_EVAL_ON_REGISTER; a reactivated
    old version needs one too: its old records no longer apply."""
    if shared.eval_on_register and view["status"] in ("created", "updated", "reactivated"):
        view.update(_queue_eval(shared, view["agent"]["id"]))
    return view


def _queue_eval(shared: Shared, agent_id: str) -> dict[str, Any]:
    """Start the new version's full eval (HOLON_EVAL_ON_REGISTER); the workers run it."""
    try:
        plan = shared.service.evals.plan(agent_id, EvalOptions())
        info = shared.service.evals.begin(plan)
    except HolonError as exc:
        return {"queued_eval": None, "queued_eval_error": exc.to_body()["error"]}
    return {"queued_eval": info.id}


ENDPOINTS = [
    endpoint(operations.AGENTS_REGISTER, before=_reachable, after=_queued),
    endpoint(operations.AGENTS_LIST),
    endpoint(operations.AGENTS_SHOW),
    endpoint(operations.AGENTS_DISABLE),
    endpoint(operations.AGENTS_ENABLE),
    endpoint(operations.AGENTS_SECRET_SET),
    endpoint(operations.AGENTS_SECRET_CLEAR),
    endpoint(operations.SUITES_LIST),
    endpoint(operations.SUITES_SHOW),
    endpoint(operations.SUITES_CASES),
    endpoint(operations.SUITES_FILES),
    endpoint(operations.RECORDS_SHOW),
]
