"""Console pages of a caller: the agents its mandates cover, with their scores, lower
bounds and certificates, and "try a call": a real live call under its mandates, through
the live-call path `POST /v1/agents/{org}/{name}/invoke` takes (`LiveCalls.invoke`: the
decision, the reservation, the ledger row), after a first step that says the most it
can cost.

An agent a caller's mandates do not cover is "not found" to it, as a mandate it does
not hold is; every call is still decided when it is made (scores, budget, rate).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from starlette.responses import Response

from gateway.console._web import Web
from gateway.operations import MANDATES_LIST, RECORDS_SHOW, AgentRef, MandatesQuery
from gateway.web import observed, parse_body
from schema.errors import HolonError, NotFound, UsageError
from schema.jsontext import dumps

__all__ = ["MAX_INPUT_BYTES", "agent_page", "agents_page", "confirm_call", "make_call"]

MAX_INPUT_BYTES = 32 * 1024  # a tried call's input, within the console's 64 KiB form
ANSWER_SHOWN = 2000  # characters of an answer's output on the page
MAX_COVERED = 200  # agents listed for one caller


def _mandates(web: Web) -> list[dict[str, Any]]:
    query = MandatesQuery(caller=web.who.name, include_revoked=False, limit=1000)
    items: list[dict[str, Any]] = web.shared.service.call(MANDATES_LIST, query)["items"]
    return [m for m in items if m.get("active", True)]


def _covered(web: Web) -> dict[str, dict[str, Any]]:
    """Each enabled agent a mandate of the caller covers (a capability of the agent that
    the mandate names, and the agent among its `agents` when it lists them), with the
    capabilities and the largest per-call cap under which it could be called."""
    store = web.shared.store
    out: dict[str, dict[str, Any]] = {}
    for held in _mandates(web):
        document = held["mandate"]
        named = document.get("agents")
        cap = Decimal(str(document.get("max_cost_per_call_usd", "0")))
        for capability in document.get("capabilities") or []:
            for info in store.agents.list(capability=capability, limit=MAX_COVERED).items:
                if named is not None and info.id not in named:
                    continue
                entry = out.setdefault(
                    info.id, {"id": info.id, "capabilities": set(), "max_cost_usd": cap}
                )
                entry["capabilities"].add(capability)
                entry["max_cost_usd"] = max(entry["max_cost_usd"], cap)
    return dict(sorted(out.items())[:MAX_COVERED])


def _record(web: Web, agent_id: str) -> dict[str, Any] | None:
    """The agent's current record as any token reads it (`GET /v1/records/{org}/{name}`)."""
    try:
        view: dict[str, Any] = web.shared.service.call(RECORDS_SHOW, AgentRef(agent_id))
    except NotFound:
        return None
    assert RECORDS_SHOW.present is not None
    shown: dict[str, Any] = RECORDS_SHOW.present(
        web.who, AgentRef(agent_id), view, web.shared.service
    )
    return shown


def _listed(web: Web) -> list[dict[str, Any]]:
    rows = []
    for agent_id, entry in _covered(web).items():
        rows.append(
            {
                **entry,
                "capabilities": sorted(entry["capabilities"]),
                "record": _record(web, agent_id),
            }
        )
    return rows


async def agents_page(web: Web) -> Response:
    return web.page("caller_agents.html", agents=await web.shared.run(_listed, web))


def _agent_id(web: Web) -> str:
    return f"{web.request.path_params['org']}/{web.request.path_params['name']}"


def _one(web: Web, agent_id: str) -> dict[str, Any]:
    entry = _covered(web).get(agent_id)
    if entry is None:
        raise NotFound(f"no agent {agent_id!r} under your mandates", details={"agent": agent_id})
    return {
        **entry,
        "capabilities": sorted(entry["capabilities"]),
        "record": _record(web, agent_id),
    }


async def agent_page(web: Web) -> Response:
    """A caller's view of an agent its mandates cover: its score and the call form."""
    agent = await web.shared.run(_one, web, _agent_id(web))
    return web.page("caller_agent.html", agent=agent, form={}, step="ask", answer=None)


def _asked(web: Web, agent: dict[str, Any]) -> tuple[str, Any, str]:
    capability = web.field("capability").strip()
    if capability not in agent["capabilities"]:
        raise UsageError(
            f"{capability[:100]!r} is not a capability your mandates cover on {agent['id']}",
            details={"field": "capability", "capabilities": agent["capabilities"]},
        )
    text = web.field("input")
    if len(text.encode()) > MAX_INPUT_BYTES:
        raise UsageError(
            f"the input is at most {MAX_INPUT_BYTES} bytes", details={"field": "input"}
        )
    value = parse_body(text.encode())
    return capability, value, text


async def confirm_call(web: Web) -> Response:
    """Step one: the call as it would be made, and the most it can cost; nothing is called."""
    agent = await web.shared.run(_one, web, _agent_id(web))
    capability, _, text = _asked(web, agent)
    form = {"capability": capability, "input": text}
    return web.page("caller_agent.html", agent=agent, form=form, step="confirm", answer=None)


async def _as_it_is(body: dict[str, Any], limit: int) -> dict[str, Any]:
    """The answer kept for the page (which cuts its output), not encoded for a wire."""
    return body


async def make_call(web: Web) -> Response:
    """Step two: the live call, decided, reserved, made and settled as the API's."""
    agent = await web.shared.run(_one, web, _agent_id(web))
    capability, value, text = _asked(web, agent)
    form = {"capability": capability, "input": text}
    try:
        # Counted in /metrics as the API's /invoke counts its calls (the same function).
        call = web.shared.calls.invoke(web.who.name, agent["id"], capability, value)
        body = await observed(web.shared, capability, call, _as_it_is)
    except HolonError as exc:
        # A denial or a failed call is the call's answer, shown on the page it was made from.
        failed = exc.to_body()["error"]
        status = exc.http_status if exc.http_status >= 400 else 502
        return web.page(
            "caller_agent.html",
            status,
            agent=agent,
            form=form,
            step="ask",
            answer={"error": failed},
        )
    answer = {**body, "output": dumps(body.get("output"))[: ANSWER_SHOWN * 2]}
    return web.page("caller_agent.html", agent=agent, form=form, step="ask", answer=answer)
