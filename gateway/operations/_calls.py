"""The operations over mandates and the ledger, each declared once (see _declare.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gateway._roles import LEDGER, OPERATOR
from gateway.operations._declare import (
    Bearer,
    Cli,
    Column,
    Fields,
    Lines,
    Operation,
    Table,
    created_if_new,
    cursor,
    document_field,
    entity,
    key,
    limit,
    list_of,
    page_of,
    paged,
    param,
    view,
)
from gateway.operations._narrow import by_bearer
from gateway.operations._registry import agent_id
from schema.errors import NotFound, UsageError
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService


# -- ledger.list -------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerQuery:
    """`GET /v1/ledger`, `holon ledger`, the console's ledger page and its CSV."""

    caller: str | None = param(
        help="operator only: one caller's rows", cli_help="only this caller's calls", metavar="C"
    )
    mandate: str | None = param(
        help="one mandate's", cli_help="only calls under this mandate", metavar="M"
    )
    agent: str | None = param(help="one agent's", cli_help="only calls to this agent", metavar="A")
    # records.DECISION_CODES, spelled out: building the parser never imports the store.
    decision: str | None = param(
        help="allow or deny", cli_help="only allowed or denied", choices=("allow", "deny")
    )
    limit: int = limit()
    cursor: str | None = cursor()


def _own_ledger(who: Bearer, query: LedgerQuery) -> LedgerQuery:
    if who.kind != "caller":
        return query
    if query.caller not in (None, who.name):
        raise UsageError("a caller token reads its own ledger only")
    return replace(query, caller=who.name)


def _ledger(service: StoreService, query: LedgerQuery) -> JSONObject:
    service.store.ledger.expire()
    page = service.store.ledger.list(
        caller=query.caller,
        mandate_id=query.mandate,
        agent_id=query.agent,
        decision=query.decision,  # type: ignore[arg-type]  # one of the declared choices
        cursor=query.cursor,
        limit=query.limit,
    )
    return paged(page)


def _mandate_text(row: JSONObject) -> str | None:
    """`id rN`: the mandate and the revision that decided the call."""
    if row["mandate"] is None or row["mandate_revision"] is None:
        return None if row["mandate"] is None else str(row["mandate"])
    return f"{row['mandate']} r{row['mandate_revision']}"


LEDGER_LIST = Operation(
    name="ledger.list",
    method="GET",
    path="/v1/ledger",
    roles=LEDGER,
    request=LedgerQuery,
    summary="ledger rows, newest first (callers: their own)",
    run=_ledger,
    response=page_of("ledger-row"),
    settle=True,
    narrow=_own_ledger,
    cli=Cli(
        help="live calls and their decisions, newest first",
        description="One row per live call: caller, agent, capability, the mandate and its "
        "revision that decided it (`ID rN`), decision (with the deny reason), the eval whose "
        "record it read, outcome and cost. A caller's token reads its own rows.",
        render=Table(
            (
                Column("time", key("at")),
                Column("caller", key("caller")),
                Column("agent", key("agent")),
                Column("capability", key("capability")),
                Column("mandate", _mandate_text),
                Column(
                    "decision",
                    lambda r: (
                        r["decision"] if r["reason"] is None else f"{r['decision']}: {r['reason']}"
                    ),
                ),
                Column("record", key("record_eval_id")),
                Column("outcome", lambda r: r["outcome"] or r["status"]),
                Column("cost", lambda r: f"${r['cost_usd']}"),
            ),
            empty="no live calls yet",
        ),
    ),
)


# -- mandates.list -----------------------------------------------------------------


@dataclass(frozen=True)
class MandatesQuery:
    caller: str | None = param(
        help="only the mandates this caller holds", metavar="NAME", renamed="holder"
    )
    include_revoked: bool = param(
        False, help="true: revoked too", cli_help="include revoked mandates", flag="--all"
    )
    limit: int = limit()
    cursor: str | None = cursor()


def _mandates(service: StoreService, query: MandatesQuery) -> JSONObject:
    page = service.store.mandates.list(
        holder=query.caller,
        include_revoked=query.include_revoked,
        cursor=query.cursor,
        limit=query.limit,
    )
    return paged(page)


def _status_word(view: JSONObject) -> str:
    return "active" if view["active"] else "revoked"


def _field(name: str) -> Any:
    def text(view: JSONObject) -> str:
        from gateway.mandates import field_text  # lazily: it loads the records package

        return field_text(view["mandate"], name)

    return text


def _fields(view: JSONObject) -> list[tuple[str, str]]:
    """Every field of the document, as gateway.mandates declares it (none left out)."""
    from gateway.mandates import FIELDS, field_text

    shown = (f.key for f in FIELDS if f.key not in ("schema_version", "id", "holder"))
    return [(key, field_text(view["mandate"], key)) for key in shown]


MANDATES_LIST = Operation(
    name="mandates.list",
    method="GET",
    path="/v1/mandates",
    roles=OPERATOR,
    request=MandatesQuery,
    summary="list mandates",
    run=_mandates,
    response=page_of("mandate"),
    cli=Cli(
        help="mandates, with their holders and limits",
        render=Table(
            (
                Column("mandate", key("id")),
                Column("holder", key("holder")),
                Column("capabilities", lambda v: v["mandate"]["capabilities"]),
                Column("agents", _field("agents")),
                Column("min score", _field("min_eval_score")),
                Column("cap/call", _field("max_cost_per_call_usd")),
                Column("budget", _field("budget")),
                Column("expires", _field("expires_at")),
                Column("status", _status_word),
            ),
            empty="no mandates (holon mandates grant FILE)",
        ),
    ),
)


# -- mandates.show and mandates.revisions --------------------------------------------


@dataclass(frozen=True)
class MandateRef:
    mandate: str = param(required=True, help="the mandate's id", where="path", metavar="ID")


def _show(service: StoreService, ref: MandateRef) -> JSONObject:
    from gateway.service import mandate_view

    return mandate_view(service.store.mandates.get(ref.mandate))


MANDATES_SHOW = Operation(
    name="mandates.show",
    method="GET",
    path="/v1/mandates/{mandate}",
    roles=OPERATOR,
    request=MandateRef,
    summary="a mandate",
    run=_show,
    response=entity("mandate"),
    statuses=(404,),
    cli=Cli(
        help="one mandate and its document (or every revision)",
        description="The mandate's current document; with --revisions every revision "
        "granted, oldest first, with its time and who granted it (a token id, or local "
        "for the CLI on the store). Over a gateway a caller's token may read the "
        "revisions of the mandates it holds.",
        render=Fields(
            (
                Column("mandate", key("id")),
                Column("holder", key("holder")),
                Column("status", _status_word),
                Column("revision", key("revision")),
                Column("granted", key("granted_at")),
                Column("updated", key("updated_at")),
                Column("revoked", key("revoked_at")),
                Column("digest", key("digest")),
            ),
            extra=_fields,
        ),
    ),
)


def _revisions(service: StoreService, ref: MandateRef) -> JSONObject:
    from gateway.service import revision_view

    return {"items": [revision_view(r) for r in service.store.mandates.revisions(ref.mandate)]}


def _held_revisions(
    who: Bearer, ref: MandateRef, page: JSONObject, service: StoreService
) -> JSONObject:
    # A caller who does not hold it learns no more than of a mandate that does
    # not exist (ids are operator-made and may say whom they are for).
    if not who.is_operator and not any(r["holder"] == who.name for r in page["items"]):
        raise NotFound(f"no mandate {ref.mandate!r}", details={"mandate": ref.mandate})
    return page


MANDATES_REVISIONS = Operation(
    name="mandates.revisions",
    method="GET",
    path="/v1/mandates/{mandate}/revisions",
    roles=LEDGER,
    request=MandateRef,
    summary="every revision of a mandate, oldest first, with its time and granting token "
    "(operator; callers: mandates they hold)",
    run=_revisions,
    response=list_of("mandate-revision"),
    statuses=(404,),
    present=_held_revisions,
    cli=Cli(
        help="every revision, with its time and granter",
        render=Table(
            (
                Column("revision", key("revision")),
                Column("granted", key("granted_at")),
                Column("by", lambda r: r["granted_by"] or "(before revisions were kept)"),
                Column("holder", key("holder")),
                Column("capabilities", lambda r: r["mandate"]["capabilities"]),
                Column("cap/call", _field("max_cost_per_call_usd")),
                Column("budget", _field("budget")),
                Column("digest", lambda r: r["digest"][:12]),
            ),
            empty="no revisions",
        ),
    ),
)


# -- mandates.revoke ---------------------------------------------------------------


def _revoke(service: StoreService, ref: MandateRef) -> JSONObject:
    from gateway.service import mandate_view

    return mandate_view(service.store.mandates.revoke(ref.mandate))


MANDATES_REVOKE = Operation(
    name="mandates.revoke",
    method="POST",
    path="/v1/mandates/{mandate}/revoke",
    roles=OPERATOR,
    request=MandateRef,
    summary="revoke a mandate (kept for the ledger)",
    run=_revoke,
    response=entity("mandate"),
    statuses=(404,),
    cli=Cli(
        help="revoke a mandate (kept, with its ledger rows)",
        render=Lines(
            lambda v: [f"mandate {v['id']} ({v['holder']}) is revoked; its ledger rows stay"]
        ),
    ),
)


# -- mandates.grant ----------------------------------------------------------------


@dataclass(frozen=True)
class MandateGrant:
    # The CLI reads it from FILE, naming the file's lines in its errors.
    document: JSONObject = document_field(
        "the mandate (schema/mandate.schema.json)", {"$ref": "mandate.schema.json"}
    )
    granted_by: str | None = param(
        help="the granting token's id (on the store: local)", where="bearer", flag=""
    )
    if_revision: int | None = param(
        help="grant only if the mandate is at this revision now (0: only a new one), so an "
        "edit made on a stale read is refused (412 stale_revision) instead of overwriting",
        where="header",
        header="If-Match",
        flag="--if-revision",
        metavar="N",
        check=lambda value, where: revision_match(value, where),
        schema={"type": "string", "description": 'the revision as an ETag: "3"'},
    )


def revision_match(value: Any, where: str) -> int | None:
    """A revision precondition: an integer from the CLI, or an If-Match ETag (`"3"`, the
    quotes optional) from the API; `*` is no precondition."""
    if value is None:
        return None
    if isinstance(value, bool):
        value = None
    if isinstance(value, str):
        text = value.strip()
        if text == "*":
            return None
        text = text.removeprefix('"').removesuffix('"')
        value = int(text) if text.isascii() and text.isdigit() and len(text) <= 18 else None
    if not isinstance(value, int) or value < 0:
        raise UsageError(
            f'{where} must be a mandate revision: a whole number such as 3 (If-Match: "3")',
            details={"path": where},
        )
    return value


def _grant(service: StoreService, asked: MandateGrant) -> JSONObject:
    by = {} if asked.granted_by is None else {"granted_by": asked.granted_by}
    return service.mandates.grant(
        asked.document, source="<request>", if_revision=asked.if_revision, **by
    )


_GRANTED = {
    "created": "granted",
    "updated": "updated to revision {revision}:",
    "reinstated": "reinstated at revision {revision}:",
    "unchanged": "unchanged:",
}


def _granted(view: JSONObject) -> list[str]:
    mandate = view["mandate"]
    word = _GRANTED.get(view["status"], str(view["status"])).format(revision=mandate["revision"])
    return [f"{word} mandate {mandate['id']} for {mandate['holder']}"]


MANDATES_GRANT = Operation(
    name="mandates.grant",
    method="POST",
    path="/v1/mandates",
    roles=OPERATOR,
    request=MandateGrant,
    summary="grant (or update) a mandate",
    run=_grant,
    response=view("mandate-grant"),
    statuses=(413, 422),
    status=created_if_new,
    narrow=by_bearer,
    body_name="the mandate",
    max_body_bytes=256 * 1024,
    cli=Cli(
        help="grant a mandate from a file, or a new revision of one",
        description="Validate the mandate in FILE (YAML or JSON, schema/mandate.schema.json) "
        "and store it under its id: a new mandate, or a new revision of the one with that id "
        "(a revoked one is reinstated). A holder may hold several mandates.",
        render=Lines(_granted, warnings=lambda view: [w["message"] for w in view["warnings"]]),
    ),
)


# -- mandates.check ----------------------------------------------------------------

_SHAPE = ' (the body is {"agent": "org/name", "capability": "..."})'


@dataclass(frozen=True)
class MandateCheck:
    mandate: str = param(required=True, help="the mandate's id", where="path", metavar="ID")
    agent: str = param(
        required=True,
        help="the agent to call",
        where="body",
        metavar="ORG/NAME",
        expected="an agent id" + _SHAPE,
        cli_type=agent_id,
    )
    capability: str = param(
        required=True,
        help="the capability",
        where="body",
        metavar="CAP",
        expected="a capability name" + _SHAPE,
    )


def _check(service: StoreService, asked: MandateCheck) -> JSONObject:
    return service.mandates.check(asked.mandate, asked.agent, asked.capability)


def numbers_text(values: JSONObject, skip: set[str]) -> str:
    """`key=value, …` of the numbers that decided (the keys not in `skip`)."""
    from schema.jsontext import dumps

    return ", ".join(
        f"{k}={v if isinstance(v, str) else dumps(v)}" for k, v in values.items() if k not in skip
    )


_DECISION_KEYS = {
    "agent",
    "agent_version",
    "capability",
    "mandate",
    "decision",
    "reason",
    "budget",
    "rate_limit",
}


def _decided(decision: JSONObject) -> list[str]:
    subject = f"{decision['agent']} {decision['agent_version']} for {decision['capability']}"
    if decision["decision"] == "allow":
        lines = [f"allow: mandate {decision['mandate']} allows {subject}"]
    else:
        lines = [f"deny ({decision['reason']}): mandate {decision['mandate']} on {subject}"]
    numbers = numbers_text(decision, _DECISION_KEYS)
    if numbers:
        lines.append(f"  {numbers}")
    budget = decision.get("budget")
    if budget is not None:
        lines.append(f"  budget: {numbers_text(budget, {'mandate'})}")
    rate = decision.get("rate_limit")
    if rate is not None:
        lines.append(f"  rate limit: {numbers_text(rate, set())}")
    return lines


MANDATES_CHECK = Operation(
    name="mandates.check",
    method="POST",
    path="/v1/mandates/{mandate}/check",
    roles=OPERATOR,
    request=MandateCheck,
    summary="dry-run the mandate's decision on an agent and capability",
    run=_check,
    response=view("mandate-check"),
    statuses=(404, 422),
    settle=True,  # the budget as of this process's answered calls
    max_body_bytes=64 * 1024,
    cli=Cli(
        help="dry-run a mandate's decision on an agent and capability (exit 1 on deny)",
        description="Decide as a live call by the mandate's holder would be decided by this "
        "mandate, with the live call's own code, without calling anyone, reserving budget "
        "or taking a rate-limit token: allow, or deny with the reason the call would get "
        "(a revoked mandate is no_mandate; a spent budget budget_exhausted; an empty "
        "bucket rate_limited) and the numbers that decided it (score, minimum, age, spent; "
        "with a rate limit, the calls it allows now). The input is not checked: there is "
        "none. Exit 0 on allow, 1 on deny.",
        render=Lines(_decided),
        passed=lambda decision: decision["decision"] == "allow",
    ),
)
