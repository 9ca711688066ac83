"""`holon tokens create|list|revoke`: API tokens for the gateway, on the store or over the API.

Over a gateway (`--gateway URL`) these need an operator token; the token a
`create` makes is printed once, there as on the store, and never again.
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli._app import common_options, gateway_options
from gateway.cli._context import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    parser = sub.add_parser("tokens", help="API tokens for the gateway")
    group = parser.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    create = group.add_parser(
        "create",
        parents=both,
        help="create a token (shown once, stored hashed)",
        description="Create a random token for ROLE: operator, org:ORG or caller:NAME. "
        "It is printed once and stored only as its hash; keep it. With --expires-in it "
        "stops working at that time (by default it never expires).",
    )
    create.add_argument("--role", required=True, help="operator, org:ORG or caller:NAME")
    create.add_argument("--note", help="what the token is for (shown in listings)")
    create.add_argument(
        "--expires-in",
        metavar="DURATION",
        help="expire after DURATION: a whole number and s, m, h or d (90s, 12h, 30d)",
    )
    create.set_defaults(handler=do_create)
    ls = group.add_parser(
        "list", parents=both, help="tokens with their expiry and last use, never the tokens"
    )
    ls.add_argument("--all", action="store_true", help="include revoked tokens")
    ls.set_defaults(handler=do_list)
    revoke = group.add_parser("revoke", parents=both, help="revoke a token")
    revoke.add_argument("token_id", metavar="TOKEN_ID", help="a token id (tok_…)")
    revoke.set_defaults(handler=do_revoke)


def do_create(ctx: Context) -> int:
    args = ctx.args
    if args.expires_in is not None:
        # Named as the flag, before any call; imported here, as the store is: `--help`
        # loads no store code (tests/gateway/test_cli_startup.py).
        from records import parse_duration

        parse_duration(args.expires_in, "--expires-in")
    created = ctx.client().tokens.create(args.role, note=args.note, expires_in=args.expires_in)
    if ctx.out.json_mode:
        ctx.out.json(created)
    else:
        ctx.out.line(created["token"])
        until = f", expires {created['expires_at']}" if created["expires_at"] else ""
        ctx.out.note(
            f"token {created['id']} for {created['role']}{until}: shown once, "
            "stored only as its hash"
        )
    return 0


def _expiry(view: dict[str, Any]) -> str | None:
    if view["expires_at"] is None:
        return None
    return str(view["expires_at"]) + (" (expired)" if view["expired"] else "")


def do_list(ctx: Context) -> int:
    page = ctx.client().tokens.list(include_revoked=ctx.args.all)
    if ctx.out.json_mode:
        ctx.out.json(page)
    else:
        ctx.out.table(
            ["token", "role", "starts", "note", "created", "expires", "last used", "revoked"],
            [
                (
                    t["id"],
                    t["role"],
                    t["prefix"],
                    t["note"],
                    t["created_at"],
                    _expiry(t),
                    t["last_used_at"],
                    t["revoked_at"],
                )
                for t in page["items"]
            ],
            empty="no tokens",
        )
    return 0


def do_revoke(ctx: Context) -> int:
    view = ctx.client().tokens.revoke(ctx.args.token_id)
    if ctx.out.json_mode:
        ctx.out.json({**view, "revoked": True})
    else:
        ctx.out.line(f"token {view['id']} ({view['role']}) is revoked")
    return 0
