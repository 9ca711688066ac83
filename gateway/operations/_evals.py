"""The operations over evals, each declared once (see _declare.py).

What an eval shows depends on who asks (docs/integrity.md): an operator sees
everything, anyone else the public cells' progress and summary, so the server
runs these with the bearer (`run_for`), which also checks, in the worker
thread, that the eval is of one of the org's agents. The store's service (the
CLI, operator) runs `run`.

`holon eval`, `holon evals resume` and `holon evals report|compare` are
commands of their own that run these operations (gateway/cli/_commands):
an eval on the store runs in this process with progress, and a report is a
document written to stdout or a file, not a view.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gateway._params import id_text  # the routes' check of a named thing
from gateway._roles import OPERATOR, ORG
from gateway.operations._checks import flag, integer, one_of
from gateway.operations._declare import (
    Bearer,
    Cli,
    Column,
    Fields,
    Lines,
    Operation,
    Table,
    cursor,
    document,
    entity,
    key,
    limit,
    page_of,
    param,
    view,
)
from gateway.operations._narrow import own_agent
from gateway.operations._registry import agent_id
from schema.errors import Forbidden, Refused, UsageError
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService


# evals.reports.AUDIENCES, REPORT_FORMATS, COMPARE_FORMATS (each format's media type) and
# the compare gate's rule, spelled out: importing evals.reports to build the CLI's parser
# would load the store (SQLAlchemy and every model) for every command, `--help` included.
# tests/gateway/test_cli_startup.py checks they agree.
AUDIENCES = ("author", "operator")
REPORT_MEDIA = {
    "json": "application/json",
    "md": "text/markdown",
    "html": "text/html",
    "junit": "application/xml",
}
COMPARE_MEDIA = {k: REPORT_MEDIA[k] for k in ("json", "md", "html")}
REPORT_FORMATS = tuple(REPORT_MEDIA)
COMPARE_FORMATS = tuple(COMPARE_MEDIA)
COMPARE_GATE_RULE = "fails when any case tagged critical dropped by at least 0.5 (paired runs)"


def own_eval(service: StoreService, who: Bearer, eval_id: str) -> None:
    """Forbidden unless an operator, or the org whose agent the eval is (a store read)."""
    if not who.is_operator:
        who.require_agent(service.store.evals.get(eval_id).agent_id)


def _eval_ref(**spec: Any) -> Any:
    return param(required=True, where="path", metavar="EVAL_ID", segments=("eval",), **spec)


# -- evals.list ----------------------------------------------------------------------


@dataclass(frozen=True)
class EvalsQuery:
    agent: str | None = param(
        help="org/name (required with an org token)",
        cli_help="only this agent's evals",
        metavar="ORG/AGENT",
        cli_type=agent_id,
    )
    limit: int = limit(cli_default=50)
    cursor: str | None = cursor()


def _org_lists_its_own(who: Bearer, query: EvalsQuery) -> EvalsQuery:
    if who.kind == "org":
        if query.agent is None:
            raise UsageError("an org token lists the evals of one of its agents: ?agent=org/name")
        who.require_agent(query.agent)
    return query


def _evals(service: StoreService, query: EvalsQuery) -> JSONObject:
    return service.evals.list(query.agent, query.cursor, query.limit)


def _evals_for(service: StoreService, query: EvalsQuery, who: Bearer) -> JSONObject:
    return service.evals.list(query.agent, query.cursor, query.limit, operator=who.is_operator)


EVALS_LIST = Operation(
    name="evals.list",
    method="GET",
    path="/v1/evals",
    roles=ORG,
    request=EvalsQuery,
    summary="list evals, newest first",
    run=_evals,
    response=page_of("eval"),
    run_for=_evals_for,
    narrow=_org_lists_its_own,
    cli=Cli(
        help="evals, newest first",
        render=Table(
            (
                Column("eval", key("id")),
                Column("agent", key("agent")),
                Column("version", key("agent_version")),
                Column(
                    "status",
                    lambda e: e["status"] + ("" if e.get("imported") is None else " (imported)"),
                ),
                Column("cells", key("cells")),
                Column("started", key("created_at")),
            ),
            empty="no evals yet",
        ),
    ),
)


# -- evals.show, evals.resume, evals.cancel ------------------------------------------


@dataclass(frozen=True)
class EvalRef:
    eval_id: str = _eval_ref(help="an eval id (ev_…)")


def _status(service: StoreService, ref: EvalRef) -> JSONObject:
    return service.evals.status(ref.eval_id)


def _status_for(service: StoreService, ref: EvalRef, who: Bearer) -> JSONObject:
    own_eval(service, who, ref.eval_id)
    return service.evals.status(ref.eval_id, operator=who.is_operator)


def _imported_fields(view: JSONObject) -> list[tuple[str, Any]]:
    """An imported eval's label in `evals status`: run where, imported when, checked how."""
    label = view.get("imported")
    if label is None:
        return []
    origin = label["origin"]
    made = origin["generated_by"]
    return [
        (
            "imported",
            f"{label['imported_at']} from {origin['source'] or 'a report'}: eval "
            f"{origin['eval_id']} reported by holon {made.get('holon')}; no record written here",
        ),
        *((f"checked {c['suite']}", c["cases"]) for c in label["checked"]),
    ]


def _budget_lines(view: JSONObject) -> list[str]:
    """What a cancel did with the holdout budget the eval spent, one line per outcome."""
    budget = view.get("holdout_budget")
    if budget is None:
        return []
    lines = []
    if budget["refunded"]:
        lines.append(
            f"holdout budget refunded: no holdout case was sent ({', '.join(budget['refunded'])})"
        )
    if budget["spent"]:
        lines.append(
            f"holdout budget stays spent: holdout cases were sent ({', '.join(budget['spent'])})"
        )
    return lines


def _show_extra(view: JSONObject) -> list[tuple[str, Any]]:
    return [
        *_imported_fields(view),
        *(("holdout budget", line.removeprefix("holdout budget ")) for line in _budget_lines(view)),
    ]


def _cells(view: JSONObject) -> str:
    progress = view["progress"]
    return f"{progress['done']}/{view['cells']} done, {progress['running']} running"


EVALS_SHOW = Operation(
    name="evals.show",
    method="GET",
    path="/v1/evals/{eval}",
    roles=ORG,
    request=EvalRef,
    summary="an eval's status and progress",
    run=_status,
    response=entity("eval"),
    run_for=_status_for,
    statuses=(404,),
    cli=Cli(
        help="progress and results of one eval",
        render=Fields(
            (
                Column("eval", key("id")),
                Column("agent", lambda v: f"{v['agent']} {v['agent_version']}"),
                Column("status", key("status")),
                Column("cells", _cells),
                Column("passed", lambda v: v["spent"]["passed"]),
                Column("spent", lambda v: f"${v['spent']['cost_usd']}"),
                Column("started", key("created_at")),
                Column("finished", key("finished_at")),
            ),
            extra=_show_extra,
        ),
    ),
)


def _resume(service: StoreService, ref: EvalRef) -> JSONObject:
    """Check the eval may resume; the gateway's workers (or `holon worker`) then work it."""
    from evals import resumable

    resumable(service.store, ref.eval_id, home=service.home)
    return service.evals.status(ref.eval_id)


def _cancel(service: StoreService, ref: EvalRef) -> JSONObject:
    return service.evals.cancel(ref.eval_id)


def _cancel_for(service: StoreService, ref: EvalRef, who: Bearer) -> JSONObject:
    """An org cancels the evals of its own agents, under the operator's rules (a holdout
    unit comes back only when no holdout cell was claimed: cancelling an eval whose
    holdout goes badly still costs its unit and its reveal); it reads the author's view
    of the eval, which has no `holdout_budget` (its own budget page shows what is left)."""
    own_eval(service, who, ref.eval_id)
    view = service.evals.cancel(ref.eval_id)
    return view if who.is_operator else service.evals.status(ref.eval_id, operator=False)


def _eval_action(
    action: str,
    summary: str,
    run: Callable[[StoreService, EvalRef], JSONObject],
    cli: Cli | None,
    *,
    run_for: Callable[[StoreService, EvalRef, Bearer], JSONObject] | None = None,
) -> Operation[EvalRef]:
    """`POST /v1/evals/{eval}/ACTION`: the eval as the action left it, 404 for an unknown
    eval, 409 where its state refuses the action. The operator's, or with `run_for` also
    an org's on its own agents' evals."""
    return Operation(
        name=f"evals.{action}",
        method="POST",
        path=f"/v1/evals/{{eval}}/{action}",
        roles=OPERATOR if run_for is None else ORG,
        request=EvalRef,
        summary=summary,
        run=run,
        run_for=run_for,
        response=entity("eval"),
        statuses=(404, 409),
        cli=cli,
    )


EVALS_RESUME = _eval_action(
    "resume",
    "resume an interrupted eval (refused after an agent or suite change)",
    _resume,
    None,  # `holon evals resume`: on the store it runs the eval here, with progress
)
EVALS_CANCEL = _eval_action(
    "cancel",
    "cancel a running eval (org tokens: own agents)",
    _cancel,
    Cli(
        help="stop an eval: no record is written",
        render=Lines(
            lambda v: [f"eval {v['id']} cancelled; no record will be written", *_budget_lines(v)]
        ),
    ),
    run_for=_cancel_for,
)


# -- evals.start ---------------------------------------------------------------------

MAX_SUITES = 100
MAX_PACE_S = 3600  # an hour between cells is already a crawl
MAX_COST_USD = Decimal(10**9)
MAX_COST_PLACES = 12  # decimal places of a dollar amount
START_KEYS = (
    "agent",
    "suites",
    "repetitions",
    "concurrency",
    "retries",
    "pace_s",
    "max_cost_usd",
    "dry_run",
)


def _start_keys(body: JSONObject) -> None:
    unknown = set(body) - set(START_KEYS)
    if unknown:
        raise UsageError(f"unknown keys: {', '.join(sorted(unknown))}")


def _suites(value: Any, where: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_SUITES:
        raise UsageError(f"suites must be a list of at most {MAX_SUITES} suite ids")
    return [id_text(s, f"{where}[{i}]", "a suite id") for i, s in enumerate(value)]


def _pace(value: Any, where: str) -> Decimal:
    """A JSON number from 0 to MAX_PACE_S (bounded before float(): 1E+999999 is finite)."""
    problem = UsageError(f"pace_s must be a number from 0 to {MAX_PACE_S}", details={"path": where})
    if value is None:
        return Decimal(0)
    if isinstance(value, bool) or not isinstance(value, int | Decimal):
        raise problem
    number = Decimal(value)
    if not number.is_finite() or not 0 <= number <= MAX_PACE_S:
        raise problem
    return number


def max_cost(value: Any, where: str = "$.max_cost_usd") -> str | None:
    """max_cost_usd: a decimal string (or number) of dollars, finite, 0 to MAX_COST_USD."""
    if value is None:
        return None
    problem = UsageError(
        f"max_cost_usd must be a decimal string of dollars from 0 to {MAX_COST_USD}, with at "
        f'most {MAX_COST_PLACES} decimal places, such as "5"',
        details={"path": where},
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
    return str(value)


@dataclass(frozen=True)
class EvalStart:
    """`POST /v1/evals`: what `holon eval --gateway` asks for (gateway.service.EvalOptions)."""

    agent: str = param(
        required=True, help="org/name", where="body", expected="an agent id 'org/name'"
    )
    suites: list[str] | None = param(
        help="only these suites (a narrowed eval: no record)",
        where="body",
        check=_suites,
        schema={"type": "array", "items": {"type": "string"}},
    )
    repetitions: int | None = integer(
        None, "repetitions", 1, 100, "each suite's repetitions, overridden (no record)"
    )
    concurrency: int = integer(16, "concurrency", 1, 1024, "cells in flight")
    retries: int = integer(
        2, "retries", 0, 10, "retries of a cell whose agent could not be reached"
    )
    pace_s: Decimal = param(
        Decimal(0),
        help="at least this many seconds between cells",
        where="body",
        check=_pace,
        schema={"type": "number", "minimum": 0, "maximum": MAX_PACE_S},
    )
    max_cost_usd: str | None = param(
        help="dollars, 0 to 1000000000: refuse a plan whose worst case costs more",
        where="body",
        check=max_cost,
    )
    dry_run: bool = flag("plan only (to confirm it first)")


def _start(service: StoreService, asked: EvalStart) -> JSONObject:
    return _started(service, asked, operator=True)


# An org starts evals of its own agents (docs/gateway.md): while this many evals of its
# agents run (whoever started them), it starts no other, so one org's queue cannot take
# every worker. An operator is never refused for it.
ORG_RUNNING_EVALS = 4


def _start_for(service: StoreService, asked: EvalStart, who: Bearer) -> JSONObject:
    if not who.is_operator and not asked.dry_run:
        running = service.store.evals.running_of_org(agent_id(asked.agent).split("/")[0])
        if running >= ORG_RUNNING_EVALS:
            raise Refused(
                f"{running} evals of this org's agents are running, the most an org may have",
                hint="wait for one to finish, or cancel one",
                details={"running": running, "limit": ORG_RUNNING_EVALS},
            )
    return _started(service, asked, operator=who.is_operator)


def _started(service: StoreService, asked: EvalStart, *, operator: bool) -> JSONObject:
    """The plan and the eval as `operator` or an org may read them: for an org, the suites'
    digests keyed and the eval's author view (no plan digest; the public split's counts),
    as everywhere an author reads them (docs/integrity.md)."""
    # Imported here: `holon --help` builds this table and must not load evals.
    from evals import keyed_digest
    from gateway.service import EvalOptions, eval_view, plan_view

    options = EvalOptions(
        suites=asked.suites,
        repetitions=asked.repetitions,
        concurrency=asked.concurrency,
        retries=asked.retries,
        pace_s=float(asked.pace_s),
        max_cost=None if asked.max_cost_usd is None else Decimal(asked.max_cost_usd),
    )
    plan = service.evals.plan(asked.agent, options)
    view = plan_view(plan)
    if not operator:
        secret = service.store.suites.holdout_secret()
        for entry in view["suites"]:
            entry["suite_digest"] = keyed_digest(secret, entry["suite_digest"])
    if asked.dry_run:
        return {"plan": view}
    info = service.evals.begin(plan)
    if operator:
        return {"plan": view, "eval": eval_view(info, service.store.evals.counts(info.id))}
    return {"plan": view, "eval": service.evals.status(info.id, operator=False)}


EVALS_START = Operation(
    name="evals.start",
    method="POST",
    path="/v1/evals",
    roles=ORG,
    request=EvalStart,
    summary="plan and start an eval (worked by the gateway's workers); dry_run: plan only",
    run=_start,
    response=view("eval-start"),
    run_for=_start_for,
    statuses=(404, 409, 413, 502),
    created=201,
    status=lambda asked, view: 200 if asked.dry_run else 201,
    body_check=_start_keys,
    # An org evaluates its own agents only; every budget rule of the plan applies to it
    # as to any eval (its holdout budget spent: the public split only, and no record).
    narrow=own_agent,
    max_body_bytes=64 * 1024,
    cli=None,  # `holon eval`: on the store it runs the eval here (--processes), with progress
)


# -- evals.report, evals.compare -----------------------------------------------------


def _chosen(name: str, default: str, allowed: tuple[str, ...], help: str) -> Any:
    """A query field whose value is one of `allowed` (a document's format, its audience)."""
    return param(default, help=help, check=one_of(name, allowed), schema={"enum": list(allowed)})


_audience = one_of("audience", AUDIENCES)
_AUDIENCE_HELP = "author (default) or operator (operator tokens only)"


def audience_for(who: Bearer, value: Any) -> str:
    """The audience asked, checked: only an operator reads the operator's (the console's
    report pages read it this way too)."""
    audience = str(_audience(value, "audience"))
    if audience != "author" and not who.is_operator:
        raise Forbidden("only an operator may read the operator audience (holdout cases)")
    return audience


def _operator_audience(who: Bearer, asked: Any) -> Any:
    audience_for(who, asked.audience)
    return asked


@dataclass(frozen=True)
class ReportRequest:
    eval_id: str = _eval_ref(help="an eval id (ev_…)")
    format: str = _chosen(
        "format", "json", REPORT_FORMATS, "json (default), md, html or junit (JUnit XML)"
    )
    audience: str = _chosen("audience", "author", AUDIENCES, _AUDIENCE_HELP)


def _report(service: StoreService, asked: ReportRequest) -> JSONObject:
    text = service.evals.report(asked.eval_id, audience=asked.audience, form=asked.format)
    return {"text": text}


def _report_for(service: StoreService, asked: ReportRequest, who: Bearer) -> JSONObject:
    own_eval(service, who, asked.eval_id)
    return _report(service, asked)


def _write_report(
    service: StoreService, asked: ReportRequest, who: Bearer, write: Callable[[str], object]
) -> None:
    own_eval(service, who, asked.eval_id)
    service.evals.write_report(
        asked.eval_id, audience=asked.audience, form=asked.format, write=write
    )


class _Formatted(Protocol):
    @property
    def format(self) -> str: ...


D = TypeVar("D", bound=_Formatted)


def _document(
    name: str,
    path: str,
    request: type[D],
    summary: str,
    runs: tuple[
        Callable[[StoreService, D], JSONObject], Callable[[StoreService, D, Bearer], JSONObject]
    ],
    media: dict[str, str],
    schema: str,
    statuses: tuple[int, ...],
    write: Callable[[StoreService, D, Bearer, Callable[[str], object]], None] | None = None,
) -> Operation[D]:
    """A document of evals (a report, a comparison), rendered in the format asked (its
    media type: `media`; the JSON one is the document `schema` of schema/): an org's of
    its own agents' evals, for their author; the operator's audience the operator's.
    A command of its own writes it (`holon evals report|compare`: stdout or a file)."""
    return Operation(
        name=name,
        method="GET",
        path=path,
        roles=ORG,
        request=request,
        summary=summary,
        run=runs[0],
        run_for=runs[1],
        narrow=_operator_audience,
        media=lambda asked: media[asked.format],
        media_types=tuple(
            (kind, document(schema) if kind == "application/json" else None)
            for kind in media.values()
        ),
        statuses=statuses,
        write=write,
        cli=None,
    )


EVALS_REPORT = _document(
    "evals.report",
    "/v1/evals/{eval}/report",
    ReportRequest,
    "an eval's report (org tokens: own agents, author audience)",
    (_report, _report_for),
    REPORT_MEDIA,
    "report.schema.json",
    (404,),
    _write_report,  # the API streams it as it is written
)


@dataclass(frozen=True)
class CompareRequest:
    base: str = param(required=True, help="the eval to compare against", where="path")
    candidate: str = param(required=True, help="the eval being judged", where="path")
    format: str = _chosen("format", "json", COMPARE_FORMATS, "json (default), md or html")
    audience: str = _chosen("audience", "author", AUDIENCES, _AUDIENCE_HELP)
    allow_mismatch: bool = param(False, help="true: compare unmatched evals anyway")


def _compare(service: StoreService, asked: CompareRequest) -> JSONObject:
    _, text = service.evals.compare(
        asked.base,
        asked.candidate,
        audience=asked.audience,
        allow_mismatch=asked.allow_mismatch,
        form=asked.format,
    )
    return {"text": text}


def _compare_for(service: StoreService, asked: CompareRequest, who: Bearer) -> JSONObject:
    own_eval(service, who, asked.base)
    own_eval(service, who, asked.candidate)
    return _compare(service, asked)


# `holon evals compare` exits 1 when the gate fails.
EVALS_COMPARE = _document(
    "evals.compare",
    "/v1/evals/{base}/compare/{candidate}",
    CompareRequest,
    "compare two evals case by case",
    (_compare, _compare_for),
    COMPARE_MEDIA,
    "compare.schema.json",
    (404, 409),
)
