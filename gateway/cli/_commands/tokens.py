"""`holon tokens create|list|revoke`: API tokens for the gateway, on the store or over the API.

Over a gateway (`--gateway URL`) these need an operator token; the token a
`create` makes is printed once, there as on the store, and never again. The
commands are the operations `tokens.create`, `tokens.list` and `tokens.revoke`
(gateway/operations/_registry.py).
"""

from __future__ import annotations

import argparse

from gateway.cli._app import common_options, gateway_options
from gateway.cli._operations import command
from gateway.operations import TOKENS_CREATE, TOKENS_LIST, TOKENS_REVOKE


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    parser = sub.add_parser("tokens", help="API tokens for the gateway")
    group = parser.add_subparsers(dest="tokens_command", metavar="ACTION", required=True)
    command(group, "create", TOKENS_CREATE, parents=both)
    command(group, "list", TOKENS_LIST, parents=both)
    command(group, "revoke", TOKENS_REVOKE, parents=both)
