"""Console pages over evals: progress, the report with its downloads, compare, the
operator's start (plan, then confirm) and resume, and cancel (an operator, or the org of
the eval's agent): each the API's operation."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any
from urllib.parse import quote

from starlette.responses import JSONResponse, Response

from evals import resumable
from evals.reports import COMPARE_FORMATS, REPORT_FORMATS, changed_cells
from gateway.console import _charts
from gateway.console._cell_pages import cells_of, explorer_query
from gateway.console._eval_list import STATUS_NOTES, STATUS_WORDS
from gateway.console._web import Web, see_other
from gateway.operations import EVALS_CANCEL, MAX_SUITES, EvalRef, audience_for, max_cost, own_eval
from gateway.service import EvalOptions, plan_view
from gateway.web import document_response
from schema.errors import UsageError
from schema.jsontext import loads

# The report inside the console page: the renderer's own HTML (inline styles, no script)
# in a sandboxed frame of this origin, under its own policy.
REPORT_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
    "frame-ancestors 'self'; base-uri 'none'; form-action 'none'; sandbox"
)
SUFFIX = {"html": "html", "json": "json", "md": "md", "junit": "xml"}


def _audience(web: Web) -> str:
    """The audience asked for, as the report route reads it (the operation's own rule)."""
    return audience_for(web.who, web.request.query_params.get("audience", "author"))


async def eval_page(web: Web) -> Response:
    eval_id = web.request.path_params["eval"]
    audience = _audience(web)
    query = explorer_query(web)
    shared = web.shared

    def load() -> tuple[dict[str, Any], dict[str, Any]]:
        own_eval(shared.service, web.who, eval_id)
        view = shared.service.evals.status(eval_id, operator=web.who.is_operator)
        return view, cells_of(web, eval_id, query)

    view, cells = await shared.run(load)
    progress = view.get("progress") or {}
    total = sum(int(progress.get(k, 0)) for k in ("pending", "running", "done")) or 1
    status = str(view.get("status"))
    return web.page(
        "eval.html",
        view=view,
        audience=audience,
        done_share=int(progress.get("done", 0)) / total,
        status_word=STATUS_WORDS.get(status, status),
        status_note=STATUS_NOTES.get(status, ""),
        cells=cells,
    )


async def eval_progress(web: Web) -> Response:
    """What the eval page polls while the eval runs (an author: the public cells only)."""
    eval_id = web.request.path_params["eval"]
    shared = web.shared

    def load() -> dict[str, Any]:
        own_eval(shared.service, web.who, eval_id)
        return shared.service.evals.status(eval_id, operator=web.who.is_operator)

    view = await shared.run(load)
    return JSONResponse(
        {
            "status": view["status"],
            "progress": view.get("progress"),
            "spent": {k: str(v) for k, v in (view.get("spent") or {}).items()},
        }
    )


async def eval_charts(web: Web) -> Response:
    """Pictures of the eval's report: pass rate by tag per suite and split, latency of
    its cells (the author audience: the public split only), each with its table."""
    eval_id = web.request.path_params["eval"]
    audience = _audience(web)
    shared = web.shared

    def load() -> dict[str, Any]:
        own_eval(shared.service, web.who, eval_id)
        report = loads(shared.service.evals.report(eval_id, audience=audience, form="json"))
        assert isinstance(report, dict)
        suites = []
        for suite in report.get("suites", []):
            splits = []
            for split, rows in (suite.get("tags") or {}).items():
                if rows:
                    bars = [(r["tag"], r["rate"]) for r in rows[:40]]
                    splits.append(
                        {
                            "split": split,
                            "rows": rows[:40],
                            "chart": _charts.bars(f"pass rate by tag, {split}", bars),
                        }
                    )
            suites.append({"id": suite.get("id"), "splits": splits})
        cells = [
            cell
            for suite in report.get("suites", [])
            for case in suite.get("cases", [])
            for cell in case.get("cells", [])
        ]
        latency = _charts.latency_histogram(cells)
        return {
            "eval_id": eval_id,
            "suites": suites,
            "latency": latency,
            "latency_chart": _charts.bars("latency of the eval's cells", latency),
            "cells": len(cells),
        }

    return web.page("eval_charts.html", audience=audience, **await shared.run(load))


def _download(text: str, form: str, media: str, name: str, inline: bool) -> Response:
    return _dressed(Response(text, media_type=f"{media}; charset=utf-8"), form, name, inline)


def _dressed(response: Response, form: str, name: str, inline: bool) -> Response:
    """A document's response shown in the console's frame (HTML), or downloaded."""
    if inline and form == "html":
        response.headers["Content-Security-Policy"] = REPORT_CSP
        response.headers["X-Frame-Options"] = "SAMEORIGIN"
    else:
        response.headers["Content-Disposition"] = f'attachment; filename="{name}.{SUFFIX[form]}"'
    return response


def _form_of(web: Web, allowed: dict[str, str]) -> str:
    chosen = web.request.query_params.get("format", "html")
    if chosen not in allowed:
        raise UsageError(f"format must be one of {', '.join(allowed)}")
    return chosen


async def eval_report(web: Web) -> Response:
    eval_id = web.request.path_params["eval"]
    audience = _audience(web)
    form = _form_of(web, REPORT_FORMATS)
    shared = web.shared

    def produce(write: Callable[[str], object]) -> None:
        own_eval(shared.service, web.who, eval_id)
        shared.service.evals.write_report(eval_id, audience=audience, form=form, write=write)

    # Written as it is sent, as the API does: a report may be hundreds of MB.
    response = await document_response(
        produce, status=200, media_type=f"{REPORT_FORMATS[form]}; charset=utf-8"
    )
    inline = web.request.query_params.get("view") == "1"
    return _dressed(response, form, f"{eval_id}-{audience}", inline)


def _pair(web: Web) -> tuple[str, str]:
    params = web.request.query_params
    base, candidate = params.get("base", "").strip(), params.get("candidate", "").strip()
    if not base or not candidate:
        raise UsageError("name both evals: ?base=EVAL&candidate=EVAL")
    return base, candidate


async def compare_page(web: Web) -> Response:
    params = web.request.query_params
    if "base" not in params:
        return web.page(
            "compare.html", comparison=None, changed=None, base="", candidate="", audience=""
        )
    base, candidate = _pair(web)
    audience = _audience(web)
    allow = params.get("allow_mismatch") == "true"
    shared = web.shared

    def load() -> tuple[dict[str, Any], dict[str, Any]]:
        own_eval(shared.service, web.who, base)
        own_eval(shared.service, web.who, candidate)
        comparison, _ = shared.service.evals.compare(
            base, candidate, audience=audience, allow_mismatch=allow, form="json"
        )
        # Cells as the reader's role sees them, as on the cell pages they link to.
        changed = changed_cells(shared.store, base, candidate, operator=web.who.is_operator)
        return comparison, changed

    comparison, changed = await shared.run(load)
    return web.page(
        "compare.html",
        comparison=comparison,
        changed=changed,
        base=base,
        candidate=candidate,
        audience=audience,
        allow=allow,
    )


async def compare_download(web: Web) -> Response:
    base, candidate = _pair(web)
    audience = _audience(web)
    form = _form_of(web, COMPARE_FORMATS)
    allow = web.request.query_params.get("allow_mismatch") == "true"
    shared = web.shared

    def render() -> str:
        own_eval(shared.service, web.who, base)
        own_eval(shared.service, web.who, candidate)
        _, text = shared.service.evals.compare(
            base, candidate, audience=audience, allow_mismatch=allow, form=form
        )
        return text

    text = await shared.run(render)
    inline = web.request.query_params.get("view") == "1"
    return _download(text, form, COMPARE_FORMATS[form], f"{base}-vs-{candidate}-{audience}", inline)


# -- operator actions ---------------------------------------------------------------


def _plan_fields(web: Web) -> dict[str, Any]:
    """The start form's fields, checked as the API checks POST /v1/evals's body."""
    agent = web.field("agent").strip()
    if not agent or len(agent) > 200:
        raise UsageError("name the agent: org/name")
    suites_text = web.form.get("suites", "").strip()
    suites = [s.strip() for s in suites_text.split(",") if s.strip()] or None
    if suites is not None and len(suites) > MAX_SUITES:
        raise UsageError(f"at most {MAX_SUITES} suites")
    repetitions_text = web.form.get("repetitions", "").strip()
    repetitions = None
    if repetitions_text:
        if not repetitions_text.isdigit() or not 1 <= int(repetitions_text) <= 100:
            raise UsageError("repetitions must be a whole number from 1 to 100")
        repetitions = int(repetitions_text)
    cap_text = web.form.get("max_cost_usd", "").strip()
    return {
        "agent": agent,
        "suites": suites,
        "repetitions": repetitions,
        "max_cost": Decimal(str(max_cost(cap_text))) if cap_text else None,
        "form": {
            "agent": agent,
            "suites": suites_text,
            "repetitions": repetitions_text,
            "max_cost_usd": cap_text,
        },
    }


def _plan(web: Web, fields: dict[str, Any]) -> Any:
    options = EvalOptions(
        suites=fields["suites"], repetitions=fields["repetitions"], max_cost=fields["max_cost"]
    )
    return web.shared.service.evals.plan(fields["agent"], options)


async def new_eval(web: Web) -> Response:
    agent = web.request.query_params.get("agent", "")
    return web.page("eval_new.html", form={"agent": agent}, plan=None)


async def plan_eval(web: Web) -> Response:
    """The plan with its worst-case cost, and a form to confirm it (POST /v1/evals's
    dry_run: the same plan operation)."""
    fields = _plan_fields(web)
    plan = await web.shared.run(_plan, web, fields)
    return web.page("eval_new.html", form=fields["form"], plan=plan_view(plan))


async def start_eval(web: Web) -> Response:
    fields = _plan_fields(web)
    shared = web.shared

    def begin() -> str:
        plan = _plan(web, fields)
        return shared.service.evals.begin(plan).id

    eval_id = await shared.run(begin)
    return see_other(f"/ui/evals/{quote(eval_id)}")


async def cancel_eval(web: Web) -> Response:
    """As POST /v1/evals/{eval}/cancel: an operator any eval, an org its own agents'."""
    ref = EvalRef(web.request.path_params["eval"])
    assert EVALS_CANCEL.run_for is not None
    await web.shared.run(EVALS_CANCEL.run_for, web.shared.service, ref, web.who)
    return see_other(f"/ui/evals/{quote(ref.eval_id)}")


async def resume_eval(web: Web) -> Response:
    """As POST /v1/evals/{eval}/resume: checked here, worked by the gateway's workers."""
    eval_id = web.request.path_params["eval"]
    await web.shared.run(lambda: resumable(web.shared.store, eval_id, home=web.shared.service.home))
    return see_other(f"/ui/evals/{quote(eval_id)}")
