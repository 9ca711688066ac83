"""The operations over agents and suites, each declared once (see _declare.py)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
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
    list_of,
    page_of,
    paged,
    param,
    view,
)
from gateway.operations._narrow import own_agent
from schema.errors import UsageError
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from evals.suites import Suite
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
    return paged(page)


AGENTS_LIST = Operation(
    name="agents.list",
    method="GET",
    path="/v1/agents",
    roles="any",
    request=AgentsQuery,
    summary="list agents",
    run=_agents,
    response=page_of("agent"),
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
    response=entity("agent"),
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
        response=entity("agent"),
        statuses=(404,),
        narrow=own_agent,
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
    from gateway.service import author_suite_view

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
    response=list_of("suite"),
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
    response=entity("suite"),
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


def _public_part(
    part: str, summary: str, shown: Callable[[Suite], JSONObject], cli: Cli | None
) -> Operation[SuiteRef]:
    """`GET /v1/suites/{suite}/PART`: a public part of an installed suite, which any token
    may read (no holdout case is in it); `shown` picks it from the loaded suite."""

    def run(service: StoreService, ref: SuiteRef) -> JSONObject:
        from evals.suites import load_installed

        suite = load_installed(service.store, ref.suite, service.home, ref.version)
        return {"id": suite.id, "version": suite.version, **shown(suite)}

    return Operation(
        name=f"suites.{part}",
        method="GET",
        path=f"/v1/suites/{{suite}}/{part}",
        roles="any",
        request=SuiteRef,
        summary=summary,
        run=run,
        response=view(f"suite-{part}"),
        statuses=(404,),
        cli=cli,
    )


def _cases(suite: Suite) -> JSONObject:
    return {
        "capability": suite.capability,
        "public": [
            {"id": c.id, "tags": list(c.tags), **{k: v for k, v in c.raw.items() if k != "id"}}
            for c in suite.public
        ],
        "holdout": {"cases": suite.holdout_count},
    }


def _files(suite: Suite) -> JSONObject:
    from evals.suites import public_files

    return {"files": public_files(suite)}


SUITES_CASES = _public_part(
    "cases",
    "public cases in full, the holdout as counts only",
    _cases,
    None,  # the API's: `holon suites pull` saves the public parts as files
)
SUITES_FILES = _public_part(
    "files",
    "the suite's public files (holon suites pull)",
    _files,
    Cli(
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
