"""The operations over agents and API tokens, each declared once (see _declare.py)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from gateway.operations._declare import (
    Cli,
    Column,
    JSONObject,
    Lines,
    Operation,
    Table,
    cursor,
    key,
    limit,
    param,
)
from schema.errors import UsageError

if TYPE_CHECKING:
    from gateway.client import StoreClient
    from records import AgentInfo

OPERATOR = frozenset({"operator"})

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


def _agents(client: StoreClient, query: AgentsQuery) -> JSONObject:
    from gateway.client._views import agent_view

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
        record = client.store.evals.current_record_with_staleness(
            info.id, info.version, holdout_evals=False
        )
        score = None if record is None or record["stale"] else record.get("eval_score")
        return score is not None and Decimal(str(score)) >= floor

    scan: dict[str, Any] = {}
    if floor is not None:
        scan = {"keep": scores_at_least, "max_scan": max(SCAN_BUDGET, 2 * query.limit)}
    page = client.store.agents.list(
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


# -- tokens.create, tokens.list, tokens.revoke ----------------------------------------

TOKEN_VIEW: dict[str, Any] = {
    "type": "object",
    "required": ["id", "role", "prefix", "created_at", "expired"],
    "properties": {
        "id": {"type": "string", "description": "tok_ and a ULID"},
        "role": {"type": "string", "description": "operator, org:ORG or caller:NAME"},
        "prefix": {"type": "string", "description": "the token's first characters, and …"},
        "note": {"type": ["string", "null"]},
        "created_at": {"type": "string", "format": "date-time"},
        "expires_at": {
            "type": ["string", "null"],
            "format": "date-time",
            "description": "null: never expires",
        },
        "expired": {"type": "boolean"},
        "last_used_at": {
            "type": ["string", "null"],
            "format": "date-time",
            "description": "coarse: written at most once a minute",
        },
        "revoked_at": {"type": ["string", "null"], "format": "date-time"},
    },
}
CREATED_VIEW: dict[str, Any] = {
    **TOKEN_VIEW,
    "required": ["token", *TOKEN_VIEW["required"]],
    "properties": {
        "token": {"type": "string", "description": "the token: in this response only"},
        **TOKEN_VIEW["properties"],
    },
}


def duration(text: Any, where: str) -> str:
    """A duration (90s, 12h, 30d), checked where it is given (a flag, a JSON path)."""
    from records import parse_duration  # here: building the CLI's parser loads no store

    parse_duration(text, where)
    return str(text)


@dataclass(frozen=True)
class TokenRequest:
    role: str = param(
        required=True,
        help="operator, org:ORG or caller:NAME",
        where="body",
        expected="a role: operator, org:ORG or caller:NAME",
    )
    note: str | None = param(
        help="what the token is for (shown in listings)",
        where="body",
        expected="a note (a string of at most 200 characters)",
        schema={"maxLength": 200},
    )
    expires_in: str | None = param(
        help="a duration (90s, 15m, 12h, 30d; at most 3650d); none: never expires",
        cli_help="expire after DURATION: a whole number and s, m, h or d (90s, 12h, 30d)",
        where="body",
        metavar="DURATION",
        check=duration,
        schema={"pattern": "^[1-9][0-9]{0,5}[smhd]$"},
    )


def _create(client: StoreClient, request: TokenRequest) -> JSONObject:
    from gateway.client._views import token_view
    from records import parse_duration, utcnow

    now = utcnow()
    span = None if request.expires_in is None else parse_duration(request.expires_in, "expires_in")
    info, token = client.store.tokens.create(
        request.role, request.note, expires_at=None if span is None else now + span
    )
    return {"token": token, **token_view(info, now)}


def _created_note(view: JSONObject) -> list[str]:
    until = f", expires {view['expires_at']}" if view["expires_at"] else ""
    return [f"token {view['id']} for {view['role']}{until}: shown once, stored only as its hash"]


TOKENS_CREATE = Operation(
    name="tokens.create",
    method="POST",
    path="/v1/tokens",
    roles=OPERATOR,
    request=TokenRequest,
    summary="create a token (shown in this response only, stored as its hash)",
    run=_create,
    response=CREATED_VIEW,
    statuses=(413,),
    created=201,
    no_store=True,
    body_name="a token request",
    cli=Cli(
        help="create a token (shown once, stored hashed)",
        description="Create a random token for ROLE: operator, org:ORG or caller:NAME. "
        "It is printed once and stored only as its hash; keep it. With --expires-in it "
        "stops working at that time (by default it never expires).",
        render=Lines(lines=lambda view: [view["token"]], notes=_created_note),
    ),
)


@dataclass(frozen=True)
class TokensQuery:
    include_revoked: bool = param(
        False, help="true: revoked too", cli_help="include revoked tokens", flag="--all"
    )


def _tokens(client: StoreClient, query: TokensQuery) -> JSONObject:
    from gateway.client._views import token_view
    from records import utcnow

    now = utcnow()
    items = client.store.tokens.list(include_revoked=query.include_revoked)
    return {"items": [token_view(t, now) for t in items]}


def _expiry(view: JSONObject) -> str | None:
    if view["expires_at"] is None:
        return None
    return str(view["expires_at"]) + (" (expired)" if view["expired"] else "")


TOKENS_LIST = Operation(
    name="tokens.list",
    method="GET",
    path="/v1/tokens",
    roles=OPERATOR,
    request=TokensQuery,
    summary="list tokens (never the tokens themselves)",
    run=_tokens,
    response={"type": "object", "properties": {"items": {"type": "array", "items": TOKEN_VIEW}}},
    cli=Cli(
        help="tokens with their expiry and last use, never the tokens",
        render=Table(
            (
                Column("token", key("id")),
                Column("role", key("role")),
                Column("starts", key("prefix")),
                Column("note", key("note")),
                Column("created", key("created_at")),
                Column("expires", _expiry),
                Column("last used", key("last_used_at")),
                Column("revoked", key("revoked_at")),
            ),
            empty="no tokens",
        ),
    ),
)


@dataclass(frozen=True)
class TokenRef:
    token: str = param(required=True, help="a token id (tok_…)", where="path", metavar="TOKEN_ID")


def _revoke(client: StoreClient, ref: TokenRef) -> JSONObject:
    from gateway.client._views import token_view
    from records import utcnow

    return token_view(client.store.tokens.revoke(ref.token), utcnow())


TOKENS_REVOKE = Operation(
    name="tokens.revoke",
    method="POST",
    path="/v1/tokens/{token}/revoke",
    roles=OPERATOR,
    request=TokenRef,
    summary="revoke a token (kept, listed with --all)",
    run=_revoke,
    response=TOKEN_VIEW,
    statuses=(404,),
    cli=Cli(
        help="revoke a token",
        render=Lines(
            lines=lambda view: [f"token {view['id']} ({view['role']}) is revoked"],
            json=lambda view: {**view, "revoked": True},
        ),
    ),
)
