"""`holon keys list|rotate|jwks`: the store's certificate signing keys (docs/certificates.md).

Over a gateway (`--gateway URL`) `list` and `rotate` need an operator token;
`jwks` is public, as `/.well-known/jwks.json` is.
"""

from __future__ import annotations

import argparse

from gateway.cli._app import common_options, gateway_options
from gateway.cli._context import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    parser = sub.add_parser("keys", help="certificate signing keys")
    group = parser.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    ls = group.add_parser(
        "list",
        parents=both,
        help="the signing keys: the one that signs, and retired ones that still verify",
        description="List this store's Ed25519 signing keys (made on first use) and its "
        "issuer name. Private keys are encrypted at rest and never shown.",
    )
    ls.set_defaults(handler=do_list)
    rotate = group.add_parser(
        "rotate",
        parents=both,
        help="retire the signing key and make a new one",
        description="Retire the signing key and make a new one. The retired key stays in "
        "the key set (/.well-known/jwks.json), so every certificate it signed still verifies.",
    )
    rotate.set_defaults(handler=do_rotate)
    jwks = group.add_parser(
        "jwks", parents=both, help="the public key set (JWKS), as /.well-known/jwks.json"
    )
    jwks.set_defaults(handler=do_jwks)


def do_list(ctx: Context) -> int:
    view = ctx.client().certificates.keys()
    if ctx.out.json_mode:
        ctx.out.json(view)
        return 0
    ctx.out.line(f"issuer: {view['issuer']}")
    ctx.out.table(
        ["kid", "algorithm", "created", "retired", "signs"],
        [
            (k["kid"], k["algorithm"], k["created_at"], k["retired_at"], k["active"])
            for k in view["items"]
        ],
        empty="no keys",
    )
    return 0


def do_rotate(ctx: Context) -> int:
    view = ctx.client().certificates.rotate_key()
    if ctx.out.json_mode:
        ctx.out.json(view)
    else:
        retired = ", ".join(view["retired"]) or "none"
        ctx.out.line(f"key {view['kid']} signs now; retired (still verifying): {retired}")
    return 0


def do_jwks(ctx: Context) -> int:
    ctx.out.json(ctx.client().certificates.jwks())
    return 0
