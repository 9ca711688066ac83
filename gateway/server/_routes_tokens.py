"""Routes of API tokens: create (shown once), list, revoke; operator tokens only.

The token itself is in the body of the one response that creates it, and
nowhere else: not in a listing, not in a log line (nothing here logs a body),
not in an error. A token created here works at once; one revoked here stops
working on every gateway process within the token cache's TTL (one second by
default), an expired one at the instant it expires.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.server._auth import Bearer
from gateway.server._http import body_object, id_text, json_response, read_json
from gateway.server._service import Endpoint, Service
from records import parse_duration
from schema.errors import UsageError

OPERATOR = frozenset({"operator"})
FIELDS = ("role", "note", "expires_in")

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
CREATE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["role"],
    "additionalProperties": False,
    "properties": {
        "role": {"type": "string", "description": "operator, org:ORG or caller:NAME"},
        "note": {"type": "string", "maxLength": 200},
        "expires_in": {
            "type": "string",
            "pattern": "^[1-9][0-9]{0,5}[smhd]$",
            "description": "a duration (90s, 15m, 12h, 30d; at most 3650d); none: never expires",
        },
    },
}


async def create_token(request: Request, who: Bearer, svc: Service) -> Response:
    body = body_object(await read_json(request, 16 * 1024), "the body")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise UsageError(
            f"$.{unknown[0][:40]} is not a field of a token request",
            details={"path": f"$.{unknown[0][:40]}", "fields": list(FIELDS)},
        )
    role = id_text(body.get("role"), "$.role", "a role: operator, org:ORG or caller:NAME")
    note = body.get("note")
    if note is not None:
        note = id_text(note, "$.note", "a note (a string of at most 200 characters)")
    expires_in = body.get("expires_in")
    if "expires_in" in body and expires_in is None:  # leave it out for no expiry
        parse_duration(None, "$.expires_in")
    view = await svc.run(
        lambda: svc.client.tokens.create(
            role, note=note, expires_in=expires_in, where="$.expires_in"
        )
    )
    response = json_response(view, 201)
    # The one response that holds a token: no cache or proxy along the way may keep it.
    response.headers["Cache-Control"] = "no-store"
    return response


async def list_tokens(request: Request, who: Bearer, svc: Service) -> Response:
    include = request.query_params.get("include_revoked", "false").lower() in ("1", "true")
    return json_response(await svc.run(lambda: svc.client.tokens.list(include_revoked=include)))


async def revoke_token(request: Request, who: Bearer, svc: Service) -> Response:
    return json_response(await svc.run(svc.client.tokens.revoke, request.path_params["token"]))


ENDPOINTS = [
    Endpoint(
        "POST",
        "/v1/tokens",
        OPERATOR,
        create_token,
        "create a token (shown in this response only, stored as its hash)",
        request=CREATE_SCHEMA,
        response=CREATED_VIEW,
        statuses=(413,),
    ),
    Endpoint(
        "GET",
        "/v1/tokens",
        OPERATOR,
        list_tokens,
        "list tokens (never the tokens themselves)",
        response={
            "type": "object",
            "properties": {"items": {"type": "array", "items": TOKEN_VIEW}},
        },
        query=(("include_revoked", "true: revoked too"),),
    ),
    Endpoint(
        "POST",
        "/v1/tokens/{token}/revoke",
        OPERATOR,
        revoke_token,
        "revoke a token (kept, listed with --all)",
        response=TOKEN_VIEW,
        statuses=(404,),
    ),
]
