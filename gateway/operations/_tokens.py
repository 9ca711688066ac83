"""The operations over API tokens and the signing keys, each declared once (see _declare.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway._roles import OPERATOR
from gateway.operations._declare import (
    Cli,
    Column,
    Lines,
    Operation,
    Schema,
    Sections,
    Table,
    entity,
    key,
    list_of,
    param,
    view,
)
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService


# -- tokens.create, tokens.list, tokens.revoke ----------------------------------------


def _created_view() -> dict[str, Any]:
    token = entity("token")()
    return {
        **token,
        "title": "a token just created: the token itself (this once) and its record",
        "required": ["token", *token["required"]],
        "properties": {
            "token": {"type": "string", "description": "the token: in this response only"},
            **token["properties"],
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


def _create(service: StoreService, request: TokenRequest) -> JSONObject:
    from gateway.service import token_view
    from records import parse_duration, utcnow

    now = utcnow()
    span = None if request.expires_in is None else parse_duration(request.expires_in, "expires_in")
    info, token = service.store.tokens.create(
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
    response=Schema(_created_view, "the `token` entity with the token itself (this once)"),
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


def _tokens(service: StoreService, query: TokensQuery) -> JSONObject:
    from gateway.service import token_view
    from records import utcnow

    now = utcnow()
    items = service.store.tokens.list(include_revoked=query.include_revoked)
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
    response=list_of("token"),
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


def _revoke(service: StoreService, ref: TokenRef) -> JSONObject:
    from gateway.service import token_view
    from records import utcnow

    return token_view(service.store.tokens.revoke(ref.token), utcnow())


TOKENS_REVOKE = Operation(
    name="tokens.revoke",
    method="POST",
    path="/v1/tokens/{token}/revoke",
    roles=OPERATOR,
    request=TokenRef,
    summary="revoke a token (kept, listed with --all)",
    run=_revoke,
    response=entity("token"),
    statuses=(404,),
    cli=Cli(
        help="revoke a token",
        render=Lines(
            lines=lambda view: [f"token {view['id']} ({view['role']}) is revoked"],
            json=lambda view: {**view, "revoked": True},
        ),
    ),
)


# -- keys.list, keys.rotate --------------------------------------------------------


@dataclass(frozen=True)
class Nothing:
    """The request of an operation that takes no fields."""


def _keys(service: StoreService, _: Nothing) -> JSONObject:
    return {"issuer": service.store.keys.issuer(), "items": service.store.keys.list()}


KEYS_LIST = Operation(
    name="keys.list",
    method="GET",
    path="/v1/keys",
    roles=OPERATOR,
    request=Nothing,
    summary="this store's signing keys (public parts)",
    run=_keys,
    response=view("key-set"),
    cli=Cli(
        help="the signing keys: the one that signs, and retired ones that still verify",
        description="List this store's Ed25519 signing keys (made on first use) and its "
        "issuer name. Private keys are encrypted at rest and never shown.",
        render=Sections(
            (
                Lines(lines=lambda view: [f"issuer: {view['issuer']}"]),
                Table(
                    (
                        Column("kid", key("kid")),
                        Column("algorithm", key("algorithm")),
                        Column("created", key("created_at")),
                        Column("retired", key("retired_at")),
                        Column("signs", key("active")),
                    ),
                    empty="no keys",
                ),
            ),
            gap=False,
        ),
    ),
)


def _rotate(service: StoreService, _: Nothing) -> JSONObject:
    return service.store.keys.rotate()


def _rotated(view: JSONObject) -> list[str]:
    retired = ", ".join(view["retired"]) or "none"
    return [f"key {view['kid']} signs now; retired (still verifying): {retired}"]


KEYS_ROTATE = Operation(
    name="keys.rotate",
    method="POST",
    path="/v1/keys/rotate",
    roles=OPERATOR,
    request=Nothing,
    summary="retire the signing key and make a new one (the old one keeps verifying)",
    run=_rotate,
    response=view("key-rotation"),
    cli=Cli(
        help="retire the signing key and make a new one",
        description="Retire the signing key and make a new one. The retired key stays in "
        "the key set (/.well-known/jwks.json), so every certificate it signed still verifies.",
        render=Lines(lines=_rotated),
    ),
)
