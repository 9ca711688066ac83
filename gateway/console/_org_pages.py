"""Console pages an org uses on its own agents: start an eval of one (the plan with its
worst-case cost and the holdout budget it spends first, then *Confirm*), as `POST
/v1/evals` does, narrowed as the API narrows it (an org evaluates its own agents only,
every budget rule applying as to any eval).

The operator's own flow over any agent is /ui/evals/new; this one starts from an agent's
page, so its agent is the page's.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import quote

from starlette.responses import Response

from gateway.console._web import Web, see_other
from gateway.operations import EVALS_START, EvalStart, holdout_budget
from gateway.web import Bearer, Shared
from schema.errors import NotFound, Refused

__all__ = ["eval_form", "plan_own_eval", "start_own_eval"]

FIELDS = ("suites", "max_cost_usd")


def _agent(web: Web) -> str:
    return f"{web.request.path_params['org']}/{web.request.path_params['name']}"


def _asked(web: Web, agent: str, dry_run: bool) -> EvalStart:
    """The form's request, read and checked as POST /v1/evals reads its body, then
    narrowed as the API narrows it (another org's agent: 403)."""
    suites = [s.strip() for s in web.form.get("suites", "").split(",") if s.strip()] or None
    cap = web.form.get("max_cost_usd", "").strip() or None
    values = {"agent": agent, "suites": suites, "max_cost_usd": cap, "dry_run": dry_run}
    asked = EVALS_START.build(values, lambda field: field.name)
    assert EVALS_START.narrow is not None
    return replace(EVALS_START.narrow(web.who, asked), dry_run=dry_run)


def _budget(web: Web, agent: str) -> tuple[list[dict[str, Any]], str | None]:
    """The budget per suite, or why the agent cannot be planned now (no suite certifies
    its capabilities, it is disabled): the form's page says so rather than failing."""
    web.who.require_agent(agent)  # before anything is read of it
    try:
        return holdout_budget(web.shared.service, agent), None
    except (Refused, NotFound) as exc:
        return [], exc.message


async def eval_form(web: Web) -> Response:
    agent = _agent(web)
    budget, problem = await web.shared.run(_budget, web, agent)
    return web.page(
        "agent_eval.html", agent=agent, budget=budget, problem=problem, plan=None, form={}
    )


def _start(shared: Shared, asked: EvalStart, who: Bearer) -> dict[str, Any]:
    """POST /v1/evals as `who` reads its answer (an org: the author's views)."""
    assert EVALS_START.run_for is not None
    return EVALS_START.run_for(shared.service, asked, who)


async def plan_own_eval(web: Web) -> Response:
    agent = _agent(web)
    asked = _asked(web, agent, dry_run=True)
    shared = web.shared

    def load() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        plan: dict[str, Any] = _start(shared, asked, web.who)["plan"]
        return plan, holdout_budget(shared.service, agent)

    plan, budget = await shared.run(load)
    form = {k: web.form.get(k, "") for k in FIELDS}
    return web.page(
        "agent_eval.html", agent=agent, budget=budget, problem=None, plan=plan, form=form
    )


async def start_own_eval(web: Web) -> Response:
    asked = _asked(web, _agent(web), dry_run=False)
    view = await web.shared.run(_start, web.shared, asked, web.who)
    return see_other(f"/ui/evals/{quote(view['eval']['id'])}")
