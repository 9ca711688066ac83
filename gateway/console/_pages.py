"""Console pages over agents and suites, and signing in and out."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.responses import Response

from evals import author_record
from evals.suites import load_installed
from gateway.console import _caller_pages, _charts, _forms
from gateway.console._data import overview
from gateway.console._web import (
    COOKIE,
    LIFETIME,
    Web,
    html,
    see_other,
    signed_in_cookie,
)
from gateway.operations import (
    MAX_VERSION,
    SUITES_ACTIVATE,
    SuiteVersion,
    live_figures,
    suites_for,
)
from records import utc_text
from schema.errors import UsageError

MAX_TOKEN_CHARS = 200  # a token is 47 characters; the form refuses anything far longer
MAX_CASES_SHOWN = 500
HISTORY = 50  # records in an agent's score history


async def sign_in_form(web: Web) -> Response:
    if web.who.role:  # signed in already
        return see_other("/ui/")
    return html("sign_in.html")


async def sign_in(web: Web) -> Response:
    token = web.field("token", "").strip()
    shared = web.shared
    if not token or len(token) > MAX_TOKEN_CHARS:
        return html("sign_in.html", 401, problem="paste an API token (hol_…)")
    info = await shared.run(shared.store.tokens.authenticate, token)
    if info is None:
        # The API's one answer for every token that does not authenticate.
        return html("sign_in.html", 401, problem="unknown, revoked or expired token")
    cookie = await shared.run(shared.store.sessions.create, info.id, LIFETIME)
    response = see_other("/ui/" if info.role.split(":")[0] != "caller" else "/ui/mandates")
    signed_in_cookie(response, web.request, cookie, int(LIFETIME.total_seconds()))
    return response


async def sign_out(web: Web) -> Response:
    cookie = web.request.cookies.get(COOKIE, "")
    await web.shared.run(web.shared.store.sessions.end, cookie)
    response = see_other("/ui/sign-in")
    response.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
    return response


async def overview_page(web: Web) -> Response:
    if web.who.kind == "caller":
        return await _caller_pages.agents_page(web)
    cursor = web.request.query_params.get("cursor")
    data = await web.shared.run(overview, web.shared, web.who, cursor)
    # An org's agents' live calls, every caller's together (it reads no caller's rows).
    live = None
    if web.who.kind == "org":
        live = await web.shared.run(live_figures, web.shared.service, web.who.name)
    return web.page("overview.html", data=data, live=live)


def _agent_id(web: Web) -> str:
    return f"{web.request.path_params['org']}/{web.request.path_params['name']}"


def _agent(web: Web, agent_id: str) -> dict[str, Any]:
    shared, who = web.shared, web.who
    who.require_agent(agent_id)
    agent = shared.service.get_agent(agent_id)
    history = shared.store.evals.record_history(agent_id)[:HISTORY]
    if not who.is_operator:
        history = [author_record(r) for r in history]
    evals = shared.service.evals.list(agent_id, None, 20, operator=who.is_operator)["items"]
    latest: dict[str, dict[str, Any]] = {}  # suite -> the newest record graded on it
    for record in history:
        for suite_id, graded in record.suites.items():
            if suite_id not in latest:
                latest[suite_id] = {
                    "suite": suite_id,
                    "eval_id": record.eval_id,
                    "evaluated_at": utc_text(record.evaluated_at),
                    "agent_version": record.agent_version,
                    "score": graded.score,
                    "threshold": graded.threshold,
                    "verdict": graded.overfit.verdict,
                }
    points = [
        (
            f"{r.agent_version} {utc_text(r.evaluated_at)[:10]}",
            r.eval_score,
            *(r.eval_score_ci95 or (None, None)),
        )
        for r in reversed(history)
    ]
    chart = _charts.line("eval_score over versions and evals", points)
    return {
        "agent": agent,
        # The table shows each record as the API writes it.
        "history": [r.to_json() for r in reversed(history)],
        "evals": evals,
        "latest": sorted(latest.values(), key=lambda e: e["suite"]),
        "chart": chart,
        # The newest record's certificate (its page says whether it still holds).
        "certificate_id": history[0].certificate_id if history else None,
    }


async def agent_page(web: Web) -> Response:
    if web.who.kind == "caller":  # an agent its mandates cover: its score, a call to try
        return await _caller_pages.agent_page(web)
    data = await web.shared.run(_agent, web, _agent_id(web))
    return web.page("agent.html", **data)


async def set_disabled(web: Web, disabled: bool) -> Response:
    agent_id = _agent_id(web)
    web.who.require_agent(agent_id)  # as the API's disable and enable routes
    await web.shared.run(web.shared.service.set_agent_disabled, agent_id, disabled)
    return see_other(f"/ui/agents/{quote(agent_id)}")


async def disable_agent(web: Web) -> Response:
    return await set_disabled(web, True)


async def enable_agent(web: Web) -> Response:
    return await set_disabled(web, False)


async def suites_page(web: Web) -> Response:
    def load() -> list[dict[str, Any]]:
        return suites_for(web.who, web.shared.service, web.shared.service.list_suites()["items"])

    return web.page("suites.html", suites=await web.shared.run(load))


def _version(text: str | None) -> int | None:
    if text is None or text == "":
        return None
    if not text.isdigit() or not 1 <= int(text) <= MAX_VERSION:
        raise UsageError(f"version must be a whole number from 1 to {MAX_VERSION}")
    return int(text)


async def suite_page(web: Web) -> Response:
    suite_id = web.request.path_params["suite"]
    version = _version(web.request.query_params.get("version"))
    shared = web.shared

    def load() -> dict[str, Any]:
        view = suites_for(web.who, shared.service, [shared.service.get_suite(suite_id, version)])[0]
        # The API's /v1/suites/{suite}/cases: public cases in full, the holdout as counts.
        suite = load_installed(shared.store, suite_id, shared.service.home, version)
        cases = [
            {"id": c.id, "tags": list(c.tags), "raw": {k: v for k, v in c.raw.items()}}
            for c in suite.public[:MAX_CASES_SHOWN]
        ]
        return {
            "suite": view,
            "cases": cases,
            "more_cases": max(0, len(suite.public) - MAX_CASES_SHOWN),
            "holdout_cases": suite.holdout_count,
            # suite.yaml's checks (every case's, unless it names its own): public, as
            # `holon suites pull` gives them.
            "checks": list(suite.check_definitions),
            "exposure": _forms.exposure(web, suite_id) if web.who.is_operator else None,
        }

    return web.page("suite.html", **await shared.run(load))


async def activate_suite(web: Web) -> Response:
    suite_id = web.request.path_params["suite"]
    version = _version(web.field("version"))
    if version is None:
        raise UsageError("name the version to activate")
    await web.shared.run(web.shared.service.call, SUITES_ACTIVATE, SuiteVersion(suite_id, version))
    return see_other(f"/ui/suites/{quote(suite_id)}")
