"""The operations over agents and suites, each declared once (see _declare.py)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from gateway._roles import ORG
from gateway.operations._declare import (
    Bearer,
    Cli,
    Column,
    Fields,
    Lines,
    Operation,
    Sections,
    Table,
    cursor,
    entity,
    key,
    limit,
    param,
)
from schema.errors import UsageError
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService
    from records import AgentInfo

# -- agents.list ---------------------------------------------------------------------

# Agents a `?min_eval_score=` listing reads per request, at most (or twice the
# page size, if more): the bound on one request's cost when few agents
# qualify. Each agent read costs a record lookup (about 1.5 ms on SQLite,
# 3 ms on PostgreSQL, measured), so a request stays within twice what a full
# page of 1000 cost before. A page cut short by it still carries a next_cursor.
SCAN_BUDGET = 1000


def score_floor(text: Any, where: str) -> Decimal:
    """The `min_eval_score` value, checked before any store work."""
    if isinstance(text, Decimal) and text.is_finite() and Decimal(0) <= text <= Decimal(1):
        return text
    problem = UsageError(
        f"min_eval_score must be a number from 0 to 1, got {text!r}",
        details={"min_eval_score": text if isinstance(text, str) else str(text)},
    )
    try:
        floor = Decimal(text)
    except (InvalidOperation, TypeError, ValueError):
        raise problem from None
    # NaN and infinities parse as Decimals; a score is a finite fraction.
    if not floor.is_finite() or not Decimal(0) <= floor <= Decimal(1):
        raise problem
    return floor


@dataclass(frozen=True)
class AgentsQuery:
    org: str | None = param(
        help="only this org's agents", cli_help="only this organisation's agents"
    )
    capability: str | None = param(
        help="only agents claiming it", cli_help="only agents claiming this capability"
    )
    include_disabled: bool = param(
        False, help="true: disabled agents too", cli_help="include disabled agents", flag="--all"
    )
    min_eval_score: Decimal | None = param(
        help="only agents whose current, fresh record scores at least this",
        flag="",  # the API's: the CLI does not offer it
        check=score_floor,
        schema={"type": "number", "minimum": 0, "maximum": 1},
    )
    limit: int = limit()
    cursor: str | None = cursor()


def _agents(service: StoreService, query: AgentsQuery) -> JSONObject:
    from gateway.service._views import agent_view

    floor = query.min_eval_score

    # The score filter runs inside the store's scan, before pagination, so a
    # page is full unless it is the last and the cursor walks every match
    # once. It cannot be a WHERE clause: "fresh" compares each suite the
    # record was graded on with the active suite version and its grace
    # period at the current time (records' current_record_with_staleness,
    # the rule mandates use too), over a JSON column, and the same SQL would
    # have to run on SQLite and PostgreSQL. So the registry reads agents in
    # chunks and asks this predicate, with a bound on the rows one request
    # reads (a page cut short by it says so with a next_cursor).
    def scores_at_least(info: AgentInfo) -> bool:
        """The agent's current version has a record that is fresh and scores >= floor."""
        assert floor is not None
        record = service.store.evals.current_record_with_staleness(
            info.id, info.version, holdout_evals=False
        )
        score = None if record is None or record.stale else record.eval_score
        return score is not None and score >= floor

    scan: dict[str, Any] = {}
    if floor is not None:
        scan = {"keep": scores_at_least, "max_scan": max(SCAN_BUDGET, 2 * query.limit)}
    page = service.store.agents.list(
        org=query.org,
        capability=query.capability,
        include_disabled=query.include_disabled,
        cursor=query.cursor,
        limit=query.limit,
        **scan,
    )
    return {"items": [agent_view(a) for a in page.items], "next_cursor": page.next_cursor}


AGENTS_LIST = Operation(
    name="agents.list",
    method="GET",
    path="/v1/agents",
    roles="any",
    request=AgentsQuery,
    summary="list agents",
    run=_agents,
    cli=Cli(
        help="list registered agents",
        render=Table(
            (
                Column("agent", key("id")),
                Column("version", key("version")),
                Column("protocol", lambda a: a["manifest"]["protocol"]),
                Column("capabilities", lambda a: a["manifest"]["capabilities"]),
                Column("disabled", key("disabled")),
            ),
            empty="no agents registered",
        ),
    ),
)


# -- agents.show -------------------------------------------------------------------

_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def agent_id(text: str) -> str:
    """An `org/name` argument, checked before anything is asked of the store (the CLI's
    argparse type: its error names the argument)."""
    org, sep, name = text.partition("/")
    ok = sep and all(
        part and len(part) <= 39 and part[0].isalnum() and all(c in _ID_CHARS for c in part)
        for part in (org, name)
    )
    if not ok:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an agent id: expected org/name "
            "(lowercase letters, digits and '-', each side 1 to 39 characters)"
        )
    return text


@dataclass(frozen=True)
class AgentRef:
    agent: str = param(
        required=True,
        help="the agent's id",
        where="path",
        metavar="ORG/NAME",
        segments=("org", "name"),
        cli_type=agent_id,
    )


def _agent(service: StoreService, ref: AgentRef) -> JSONObject:
    return service.get_agent(ref.agent)  # the console's agent page reads it too


def _pairs(values: dict[str, Any]) -> str | None:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or None


AGENT_FIELDS = Fields(
    (
        Column("agent", key("id")),
        Column("version", key("version")),
        Column("protocol", lambda v: v["manifest"]["protocol"]),
        Column("endpoint", lambda v: v["manifest"]["endpoint"]),
        Column("capabilities", lambda v: v["manifest"]["capabilities"]),
        Column("limits", lambda v: _pairs(v["manifest"].get("limits", {}))),
        Column("pricing", lambda v: _pairs(v["manifest"].get("pricing", {}))),
        Column("contact", lambda v: v["manifest"].get("contact")),
        Column("disabled", key("disabled")),
        Column("secret", lambda v: "set" if v["secret_set"] else "not set"),
        Column("registered", key("created_at")),
        Column("updated", key("updated_at")),
    )
)

AGENTS_SHOW = Operation(
    name="agents.show",
    method="GET",
    path="/v1/agents/{org}/{name}",
    roles="any",
    request=AgentRef,
    summary="an agent and its versions",
    run=_agent,
    statuses=(404,),
    cli=Cli(
        help="show one agent and its versions",
        render=Sections(
            (
                AGENT_FIELDS,
                Table(
                    (
                        Column("version", key("version")),
                        Column("registered", key("registered_at")),
                        Column("manifest digest", lambda v: v["manifest_digest"][:16]),
                        Column("current", key("current")),
                    ),
                    items="versions",
                ),
            )
        ),
    ),
)


# -- agents.disable, agents.enable -------------------------------------------------


def _own_agent(who: Bearer, ref: AgentRef) -> AgentRef:
    who.require_agent(ref.agent)
    return ref


def _switch(disabled: bool) -> Operation[AgentRef]:
    action = "disable" if disabled else "enable"

    def run(service: StoreService, ref: AgentRef) -> JSONObject:
        return service.set_agent_disabled(ref.agent, disabled)  # the console's too

    return Operation(
        name=f"agents.{action}",
        method="POST",
        path=f"/v1/agents/{{org}}/{{name}}/{action}",
        roles=ORG,
        request=AgentRef,
        summary=f"{action} an agent (history kept)",
        run=run,
        statuses=(404,),
        narrow=_own_agent,
        cli=Cli(
            help=f"{action} an agent (history is kept)",
            render=Lines(lambda v: [f"{v['id']} is {action}d"]),
        ),
    )


AGENTS_DISABLE = _switch(True)
AGENTS_ENABLE = _switch(False)


# -- suites.list, suites.show ------------------------------------------------------

# Suite versions are 32-bit integer columns (PostgreSQL's integer).
MAX_VERSION = 2**31 - 1


def suites_for(who: Bearer, service: StoreService, views: list[JSONObject]) -> list[JSONObject]:
    """Suite views as `who` may read them: keyed digests for anyone but an operator."""
    if who.is_operator:
        return views
    from gateway.service._views import author_suite_view

    secret = service.store.suites.holdout_secret()  # one store read for the whole listing
    return [author_suite_view(view, secret) for view in views]


def _suites(service: StoreService, _: SuitesQuery) -> JSONObject:
    return service.list_suites()  # the console's suites page reads it too


def _listed_for(who: Bearer, _: SuitesQuery, view: JSONObject, service: StoreService) -> JSONObject:
    return {**view, "items": suites_for(who, service, view["items"])}


@dataclass(frozen=True)
class SuitesQuery:
    """The active suites: no filters yet."""


SUITES_LIST = Operation(
    name="suites.list",
    method="GET",
    path="/v1/suites",
    roles="any",
    request=SuitesQuery,
    summary="the active suites",
    run=_suites,
    present=_listed_for,
    cli=Cli(
        help="the installed suites (active versions)",
        render=Table(
            (
                Column("suite", key("id")),
                Column("version", key("version")),
                Column("capability", key("capability")),
                Column("public", lambda v: v["public"]["cases"]),
                Column("holdout", lambda v: v["holdout"]["cases"]),
                Column("digest", lambda v: v["suite_digest"][:16]),
            ),
            empty="no suites installed (holon suites add PATH)",
        ),
    ),
)


@dataclass(frozen=True)
class SuiteRef:
    suite: str = param(required=True, help="an installed suite's id", where="path", metavar="ID")
    version: int | None = param(
        help="an installed version (default: the active one)",
        cli_help="an installed version (default: active)",
        minimum=1,
        maximum=MAX_VERSION,
    )


def _suite(service: StoreService, ref: SuiteRef) -> JSONObject:
    return service.get_suite(ref.suite, ref.version)  # the console's suite page reads it too


def _shown_for(who: Bearer, _: SuiteRef, view: JSONObject, service: StoreService) -> JSONObject:
    return suites_for(who, service, [view])[0]


def _pool_fields(view: JSONObject) -> list[tuple[str, str]]:
    """A pool's line: its size, the epochs it holds, and (an operator's view) those left."""
    pool = view["holdout"].get("pool")
    if pool is None:
        return []
    text = f"{pool['cases']} cases, {pool['epochs']} epochs of {view['holdout']['cases']}"
    if "remaining" in pool:
        text += f", {pool['remaining']} remaining"
    return [("holdout pool", text)]


SUITE_FIELDS = Fields(
    (
        Column(
            "suite", lambda v: f"{v['id']} v{v['version']}" + (" (active)" if v["active"] else "")
        ),
        Column("capability", key("capability")),
        Column("title", key("title")),
        Column("public cases", lambda v: v["public"]["cases"]),
        Column("holdout cases", lambda v: f"{v['holdout']['cases']} ({v['holdout']['kind']})"),
        Column("suite digest", key("suite_digest")),
        Column("installed", key("installed_at")),
    ),
    extra=_pool_fields,
)

SUITES_SHOW = Operation(
    name="suites.show",
    method="GET",
    path="/v1/suites/{suite}",
    roles="any",
    request=SuiteRef,
    summary="a suite: counts and digests",
    run=_suite,
    present=_shown_for,
    statuses=(404,),
    cli=Cli(
        help="one suite: counts, digests, versions",
        render=Sections(
            (
                SUITE_FIELDS,
                Table(
                    (
                        Column("version", key("version")),
                        Column("digest", lambda v: v["suite_digest"][:16]),
                        Column("active", key("active")),
                        Column("installed", key("installed_at")),
                    ),
                    items="versions",
                ),
            )
        ),
    ),
)


# -- suites.cases, suites.files ----------------------------------------------------


def _cases(service: StoreService, ref: SuiteRef) -> JSONObject:
    from evals.suites import load_installed

    suite = load_installed(service.store, ref.suite, service.home, ref.version)
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


SUITES_CASES = Operation(
    name="suites.cases",
    method="GET",
    path="/v1/suites/{suite}/cases",
    roles="any",
    request=SuiteRef,
    summary="public cases in full, the holdout as counts only",
    run=_cases,
    statuses=(404,),
    cli=None,  # the API's: `holon suites pull` saves the public parts as files
)


def _files(service: StoreService, ref: SuiteRef) -> JSONObject:
    from evals.suites import load_installed, public_files

    suite = load_installed(service.store, ref.suite, service.home, ref.version)
    return {"id": suite.id, "version": suite.version, "files": public_files(suite)}


SUITES_FILES = Operation(
    name="suites.files",
    method="GET",
    path="/v1/suites/{suite}/files",
    roles="any",
    request=SuiteRef,
    summary="the suite's public files (holon suites pull)",
    run=_files,
    statuses=(404,),
    cli=Cli(
        help="save a suite's public parts locally, for offline practice with `holon test`",
        # The CLI writes the files, and shows where (gateway/cli/_commands/suites.py).
        render=Lines(
            lambda v: [
                f"saved {v['id']} v{v['version']} (public cases only) to {v['path']}: "
                f"holon test {v['path']} --endpoint URL"
            ]
        ),
    ),
)


# -- records.show --------------------------------------------------------------------


# A pass rate as `evals.live_score` writes it.
_SCORE: dict[str, Any] = {
    "graded": {"type": "integer", "minimum": 0},
    "passed": {"type": "integer", "minimum": 0},
    "score": {"type": ["number", "null"], "minimum": 0, "maximum": 1},
    "ci95": {
        "type": ["array", "null"],
        "items": {"type": "number", "minimum": 0, "maximum": 1},
        "minItems": 2,
        "maxItems": 2,
    },
}


def _record_view() -> dict[str, Any]:
    """The answer of `records.show`: the record (entities/record) with its score as evidence
    and the agent's live conformance (`StoreService.evals.record`)."""
    record, live = entity("record"), entity("live-conformance")
    # A capability's counts are the window's: the window is said once, in the total.
    counts = [k for k in live["required"] if k not in ("window_days", "since")]
    return {
        **record,
        "title": "the agent's current record, its score as evidence and its live conformance",
        "required": [*record["required"], "eval_score_lower", "live"],
        "properties": {
            **record["properties"],
            "eval_score_lower": {
                "type": ["number", "null"],
                "description": "eval_score as evidence: the lowest lower bound over the graded "
                "splits, each paid for every org's holdout-revealing evals on its suite "
                "(holdout_evals; docs/integrity.md); null without an eval_score",
            },
            "live_score": {
                "type": "object",
                "description": "the operator's: per capability, the canaries' pass rate since "
                "the record's eval and over the last window_days, each with its Wilson 95% "
                "interval (docs/integrity.md, 'Canaries'); absent before the first canary",
                "additionalProperties": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["graded", "passed", "score", "ci95", "window_days", "window"],
                    "properties": {
                        **_SCORE,
                        "window_days": {"type": "integer", "minimum": 1},
                        "window": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["graded", "passed", "score", "ci95"],
                            "properties": _SCORE,
                        },
                    },
                },
            },
            "live": {
                **{k: v for k, v in live.items() if k != "title"},
                "description": "the agent's live answers and contract violations over the "
                "window, in all and by capability",
                "required": [*live["required"], "capabilities"],
                "properties": {
                    **live["properties"],
                    "capabilities": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": counts,
                            "properties": {k: live["properties"][k] for k in counts},
                        },
                    },
                },
            },
        },
    }


def _own_record(who: Bearer, ref: AgentRef) -> AgentRef:
    if who.kind == "org":
        who.require_agent(ref.agent)
    return ref


def _record(service: StoreService, ref: AgentRef) -> JSONObject:
    return service.evals.record(ref.agent)


def _record_for(who: Bearer, _: AgentRef, record: JSONObject, service: StoreService) -> JSONObject:
    """The record as `who` may see it: holdout epochs are the operator's, and each
    holdout split is its rate and interval (docs/integrity.md)."""
    if who.is_operator:
        return record
    from evals import author_record

    return author_record(record)


RECORDS_SHOW = Operation(
    name="records.show",
    method="GET",
    path="/v1/records/{org}/{name}",
    roles="any",
    request=AgentRef,
    summary="the agent's current record",
    run=_record,
    response=_record_view(),
    statuses=(404,),
    narrow=_own_record,
    present=_record_for,
    cli=Cli(
        help="the agent's current record",
        render=Fields(
            (
                Column("agent", lambda r: f"{r['agent']} {r['agent_version']}"),
                Column("eval", key("eval_id")),
                Column("evaluated", key("evaluated_at")),
                Column("eval_score", key("eval_score")),
                Column(
                    "95% CI",
                    lambda r: None if (ci := r["eval_score_ci95"]) is None else f"{ci[0]}-{ci[1]}",
                ),
                # The bound a `min_eval_score_lower` mandate reads (docs/integrity.md).
                Column(
                    "lower bound",
                    lambda r: (
                        f"{r.get('eval_score_lower')} "
                        f"(holdout-revealing evals: {_evals_count(r.get('holdout_evals'))})"
                    ),
                ),
                Column("weakest suite", key("weakest_suite")),
                Column("unverified", key("unverified_capabilities")),
                Column("stale", key("stale")),
                Column("warnings", lambda r: [w["detail"] for w in r["warnings"]] or None),
                Column("live", lambda r: _live_line(r.get("live"))),
            )
        ),
    ),
)


def _evals_count(holdout_evals: Any) -> str:
    if not isinstance(holdout_evals, dict) or not holdout_evals:
        return "0"
    return ", ".join(f"{n} on {suite}" for suite, n in sorted(holdout_evals.items()))


def _live_line(live: Any) -> str | None:
    """The record's live conformance in a line (docs/gateway.md, "Live conformance")."""
    if not isinstance(live, dict):
        return None
    rate = "-" if live.get("rate") is None else f"{live['rate']}"
    return (
        f"answers {live['calls']}, contract violations {live['violations']} (rate {rate}), "
        f"inputs refused {live['input_violations']}, since {live['since']} "
        f"({live['window_days']} days)"
    )
