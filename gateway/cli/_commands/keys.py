"""`holon keys list|rotate|jwks`: the store's certificate signing keys (docs/certificates.md).

Over a gateway (`--gateway URL`) `list` and `rotate` need an operator token;
`jwks` is public, as `/.well-known/jwks.json` is.
"""

from __future__ import annotations

import argparse

from gateway.cli._app import common_options, gateway_options
from gateway.cli._operations import command
from gateway.operations import KEYS_JWKS, KEYS_LIST, KEYS_ROTATE


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    parser = sub.add_parser("keys", help="certificate signing keys")
    group = parser.add_subparsers(dest="keys_command", metavar="ACTION", required=True)
    command(group, "list", KEYS_LIST, parents=both)
    command(group, "rotate", KEYS_ROTATE, parents=both)
    command(group, "jwks", KEYS_JWKS, parents=both)
