"""`holon tokens create|list|revoke`: API tokens for the gateway (store only)."""

from __future__ import annotations

import argparse

from gateway.cli._app import common_options
from gateway.cli._context import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("tokens", help="API tokens for the gateway (store only)")
    group = parser.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    create = group.add_parser(
        "create",
        parents=[common_options()],
        help="create a token (shown once, stored hashed)",
        description="Create a random token for ROLE: operator, org:ORG or caller:PRINCIPAL. "
        "It is printed once and stored only as its hash; keep it.",
    )
    create.add_argument("--role", required=True, help="operator, org:ORG or caller:PRINCIPAL")
    create.add_argument("--note", help="what the token is for (shown in listings)")
    create.set_defaults(handler=do_create)
    ls = group.add_parser("list", parents=[common_options()], help="tokens, never their secrets")
    ls.add_argument("--all", action="store_true", help="include revoked tokens")
    ls.set_defaults(handler=do_list)
    revoke = group.add_parser("revoke", parents=[common_options()], help="revoke a token")
    revoke.add_argument("token_id", metavar="TOKEN_ID", help="a token id (tok_…)")
    revoke.set_defaults(handler=do_revoke)


def do_create(ctx: Context) -> int:
    tokens = ctx.store_client("tokens create").store.tokens
    info, token = tokens.create(ctx.args.role, ctx.args.note)
    if ctx.out.json_mode:
        ctx.out.json({"token": token, "id": info.id, "role": info.role})
    else:
        ctx.out.line(token)
        ctx.out.note(f"token {info.id} for {info.role}: shown once, stored only as its hash")
    return 0


def do_list(ctx: Context) -> int:
    from gateway.client import timestamp

    tokens = ctx.store_client("tokens list").store.tokens.list(include_revoked=ctx.args.all)
    rows = [
        {
            "id": t.id,
            "role": t.role,
            "prefix": t.prefix + "…",
            "note": t.note,
            "created_at": timestamp(t.created_at),
            "revoked_at": timestamp(t.revoked_at) if t.revoked_at else None,
        }
        for t in tokens
    ]
    if ctx.out.json_mode:
        ctx.out.json({"items": rows})
    else:
        ctx.out.table(
            ["token", "role", "starts", "note", "created", "revoked"],
            [tuple(r.values()) for r in rows],
            empty="no tokens",
        )
    return 0


def do_revoke(ctx: Context) -> int:
    info = ctx.store_client("tokens revoke").store.tokens.revoke(ctx.args.token_id)
    if ctx.out.json_mode:
        ctx.out.json({"id": info.id, "role": info.role, "revoked": True})
    else:
        ctx.out.line(f"token {info.id} ({info.role}) is revoked")
    return 0
