"""Routes over evals: start (worked by the gateway's workers), follow, resume, report, compare."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from evals import MAX_REPORT_BYTES, resumable
from evals.reports import AUDIENCES, COMPARE_FORMATS, REPORT_FORMATS
from gateway.client._evals import eval_view, plan_view
from gateway.server._auth import Bearer
from gateway.server._http import (
    body_object,
    id_text,
    json_response,
    query_int,
    read_body,
    read_json,
)
from gateway.server._service import Endpoint, Service
from schema.errors import Forbidden, UsageError

ORG = frozenset({"operator", "org"})
OPERATOR = frozenset({"operator"})

MAX_SUITES = 100
MAX_PACE_S = 3600  # an hour between cells is already a crawl
MAX_COST_USD = Decimal(10**9)
MAX_COST_PLACES = 12  # decimal places of a dollar amount


IMPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "an operator's JSON report of one eval (schema/report.schema.json, "
    "https://holon.dev/schema/report.schema.json), as GET /v1/evals/{eval}/report"
    "?audience=operator gives it; at most 20 MiB",
}

_START_KEYS = {
    "agent",
    "suites",
    "repetitions",
    "concurrency",
    "retries",
    "pace_s",
    "max_cost_usd",
    "dry_run",
}

START_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["agent"],
    "additionalProperties": False,
    "properties": {
        "agent": {"type": "string", "description": "org/name"},
        "suites": {"type": "array", "items": {"type": "string"}},
        "repetitions": {"type": "integer", "minimum": 1},
        "concurrency": {"type": "integer", "minimum": 1, "maximum": 1024},
        "retries": {"type": "integer", "minimum": 0, "maximum": 10},
        "pace_s": {"type": "number", "minimum": 0, "maximum": MAX_PACE_S},
        "max_cost_usd": {"type": "string", "description": "dollars, 0 to 1000000000"},
        "dry_run": {"type": "boolean", "description": "plan only (to confirm it first)"},
    },
}


def _number(body: dict[str, Any], key: str, low: int, high: int) -> Decimal:
    """A JSON number from `low` to `high` (bounded before float(): 1E+999999 is finite)."""
    value = body.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise UsageError(
            f"{key} must be a number from {low} to {high}", details={"path": f"$.{key}"}
        )
    number = Decimal(value)
    if not number.is_finite() or not low <= number <= high:
        raise UsageError(
            f"{key} must be a number from {low} to {high}", details={"path": f"$.{key}"}
        )
    return number


def _money(value: Any) -> Decimal | None:
    """max_cost_usd: a decimal string (or number) of dollars, finite, 0 to MAX_COST_USD."""
    if value is None:
        return None
    problem = UsageError(
        f"max_cost_usd must be a decimal string of dollars from 0 to {MAX_COST_USD}, with at "
        f'most {MAX_COST_PLACES} decimal places, such as "5"',
        details={"path": "$.max_cost_usd"},
    )
    if isinstance(value, bool) or not isinstance(value, str | int | Decimal):
        raise problem
    if isinstance(value, str) and len(value) > 64:  # Decimal() of a 5,000-digit string is slow
        raise problem
    try:
        cap = Decimal(value)
    except (InvalidOperation, ValueError):
        raise problem from None
    # NaN, sNaN and Infinity parse as Decimals; sNaN raises on any comparison.
    # "1E-999999999" is finite but is a billion digits once written out plainly.
    if not cap.is_finite() or not Decimal(0) <= cap <= MAX_COST_USD:
        raise problem
    if int(cap.as_tuple().exponent) < -MAX_COST_PLACES:
        raise problem
    return cap


def _int(body: dict[str, Any], key: str, default: int | None, low: int, high: int) -> int | None:
    value = body.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UsageError(
            f"{key} must be an integer from {low} to {high}", details={"path": f"$.{key}"}
        )
    return value


async def start_eval(request: Request, who: Bearer, svc: Service) -> Response:
    body = body_object(await read_json(request, 64 * 1024), "the body")
    unknown = set(body) - _START_KEYS
    if unknown:
        raise UsageError(f"unknown keys: {', '.join(sorted(unknown))}")
    agent_id = id_text(body.get("agent"), "$.agent", "an agent id 'org/name'")
    suites = body.get("suites")
    if suites is not None:
        if not isinstance(suites, list) or len(suites) > MAX_SUITES:
            raise UsageError(f"suites must be a list of at most {MAX_SUITES} suite ids")
        suites = [id_text(s, f"$.suites[{i}]", "a suite id") for i, s in enumerate(suites)]
    pace = _number(body, "pace_s", 0, MAX_PACE_S)
    cap = _money(body.get("max_cost_usd"))
    repetitions = _int(body, "repetitions", None, 1, 100)
    concurrency = _int(body, "concurrency", 16, 1, 1024) or 16
    retries = _int(body, "retries", 2, 0, 10) or 0

    def plan_it() -> Any:
        return svc.client.evals.plan(
            agent_id,
            suites=suites,
            repetitions=repetitions,
            concurrency=concurrency,
            retries=retries,
            pace_s=float(pace),
            max_cost=cap,
        )

    plan = await svc.run(plan_it)
    if body.get("dry_run"):
        return json_response({"plan": plan_view(plan)})

    def begin() -> dict[str, Any]:
        info = svc.client.evals.begin(plan)
        return eval_view(info, svc.store.evals.counts(info.id))

    view = await svc.run(begin)
    return json_response({"plan": plan_view(plan), "eval": view}, 201)


async def import_eval(request: Request, who: Bearer, svc: Service) -> Response:
    """Check a report (as `GET /v1/evals/{eval}/report?audience=operator` gives it) and keep
    it as an imported eval; its own body limit, `MAX_REPORT_BYTES`, for this route only."""
    raw = await read_body(request, MAX_REPORT_BYTES)
    if not raw:
        raise UsageError("the request needs a JSON body: the report")
    source = request.query_params.get("source")
    imported_by = who.token_id

    def keep() -> dict[str, Any]:
        return svc.client.evals.import_checked(raw, source=source, imported_by=imported_by)

    return json_response(await svc.run(keep), 201)


async def list_evals(request: Request, who: Bearer, svc: Service) -> Response:
    agent = request.query_params.get("agent")
    if who.kind == "org":
        if agent is None:
            raise UsageError("an org token lists the evals of one of its agents: ?agent=org/name")
        who.require_agent(agent)
    view = await svc.run(
        lambda: svc.client.evals.list(
            agent,
            request.query_params.get("cursor"),
            query_int(request, "limit", 100, 1, 1000),
            operator=who.is_operator,
        )
    )
    return json_response(view)


def _own_eval(svc: Service, who: Bearer, eval_id: str) -> None:
    if not who.is_operator:
        who.require_agent(svc.store.evals.get(eval_id).agent_id)


async def eval_status(request: Request, who: Bearer, svc: Service) -> Response:
    eval_id = request.path_params["eval"]

    def load() -> dict[str, Any]:
        _own_eval(svc, who, eval_id)
        return svc.client.evals.status(eval_id, operator=who.is_operator)

    return json_response(await svc.run(load))


async def resume_eval(request: Request, who: Bearer, svc: Service) -> Response:
    """Check the eval may resume; the gateway's workers (or `holon worker`) then work it."""
    eval_id = request.path_params["eval"]

    def check() -> dict[str, Any]:
        resumable(svc.store, eval_id, home=svc.client.home)
        return svc.client.evals.status(eval_id)

    view = await svc.run(check)
    return json_response(view)


async def cancel_eval(request: Request, who: Bearer, svc: Service) -> Response:
    return json_response(await svc.run(svc.client.evals.cancel, request.path_params["eval"]))


def _audience(request: Request, who: Bearer) -> str:
    audience = request.query_params.get("audience", "author")
    if audience not in AUDIENCES:
        raise UsageError(f"audience must be one of {', '.join(AUDIENCES)}")
    if audience != "author" and not who.is_operator:
        raise Forbidden("only an operator may read the operator audience (holdout cases)")
    return audience


def _format(request: Request, allowed: tuple[str, ...]) -> str:
    chosen = request.query_params.get("format", "json")
    if chosen not in allowed:
        raise UsageError(f"format must be one of {', '.join(allowed)}")
    return chosen


async def eval_report(request: Request, who: Bearer, svc: Service) -> Response:
    eval_id = request.path_params["eval"]
    audience = _audience(request, who)
    form = _format(request, tuple(REPORT_FORMATS))

    def render() -> str:
        _own_eval(svc, who, eval_id)
        return svc.client.evals.report(eval_id, audience=audience, form=form)

    text = await svc.run(render)
    media = REPORT_FORMATS[form]
    return Response(text, media_type=f"{media}; charset=utf-8")


async def eval_compare(request: Request, who: Bearer, svc: Service) -> Response:
    base, candidate = request.path_params["base"], request.path_params["candidate"]
    audience = _audience(request, who)
    form = _format(request, tuple(COMPARE_FORMATS))
    allow = request.query_params.get("allow_mismatch", "false").lower() in ("1", "true", "yes")

    def render() -> str:
        _own_eval(svc, who, base)
        _own_eval(svc, who, candidate)
        _, text = svc.client.evals.compare(
            base, candidate, audience=audience, allow_mismatch=allow, form=form
        )
        return text

    text = await svc.run(render)
    return Response(text, media_type=f"{COMPARE_FORMATS[form]}; charset=utf-8")


_REPORT_QUERY = (
    ("format", "json (default), md, html or junit (JUnit XML)"),
    ("audience", "author (default) or operator (operator tokens only)"),
)

ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/evals",
        OPERATOR,
        start_eval,
        "plan and start an eval (worked by the gateway's workers); dry_run: plan only",
        request=START_SCHEMA,
        statuses=(404, 409, 413, 502),
    ),
    Endpoint(
        "POST",
        "/v1/evals/import",
        OPERATOR,
        import_eval,
        "import an operator's JSON report of an eval run elsewhere (at most 20 MiB): checked "
        "by recomputing every derived number, kept as an imported eval, no record written",
        # Described, not referenced: the report schema is what the import checks the body
        # against, and a generator drawing whole reports from it (the API fuzz) never ends.
        request=IMPORT_SCHEMA,
        query=(("source", "where the report came from (a file name, a gateway URL), kept"),),
        statuses=(413, 422),
    ),
    Endpoint(
        "GET",
        "/v1/evals",
        ORG,
        list_evals,
        "list evals, newest first",
        query=(
            ("agent", "org/name (required with an org token)"),
            ("cursor", "from a previous page"),
            ("limit", "1 to 1000 (default 100)"),
        ),
    ),
    Endpoint(
        "GET",
        "/v1/evals/{eval}",
        ORG,
        eval_status,
        "an eval's status and progress",
        statuses=(404,),
    ),
    Endpoint(
        "POST",
        "/v1/evals/{eval}/resume",
        OPERATOR,
        resume_eval,
        "resume an interrupted eval (refused after an agent or suite change)",
        statuses=(404, 409),
    ),
    Endpoint(
        "POST",
        "/v1/evals/{eval}/cancel",
        OPERATOR,
        cancel_eval,
        "cancel a running eval",
        statuses=(404, 409),
    ),
    Endpoint(
        "GET",
        "/v1/evals/{eval}/report",
        ORG,
        eval_report,
        "an eval's report (org tokens: own agents, author audience)",
        query=_REPORT_QUERY,
        statuses=(404,),
        media="application/json",
    ),
    Endpoint(
        "GET",
        "/v1/evals/{base}/compare/{candidate}",
        ORG,
        eval_compare,
        "compare two evals case by case",
        query=(
            ("format", "json (default), md or html"),
            _REPORT_QUERY[1],
            ("allow_mismatch", "true: compare unmatched evals anyway"),
        ),
        statuses=(404, 409),
        media="application/json",
    ),
]
