"""`holon tokens create|list|revoke`: API tokens for the gateway, on the store or over the API.

Over a gateway (`--gateway URL`) these need an operator token; the token a
`create` makes is printed once, there as on the store, and never again. The
commands are the operations `tokens.create`, `tokens.list` and `tokens.revoke`
(gateway/operations/_registry.py).
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli._operations import operation_group
from gateway.operations import TOKENS_CREATE, TOKENS_LIST, TOKENS_REVOKE, Operation

ACTIONS: dict[str, Operation[Any]] = {
    "create": TOKENS_CREATE,
    "list": TOKENS_LIST,
    "revoke": TOKENS_REVOKE,
}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    operation_group(sub, "tokens", "API tokens for the gateway", ACTIONS)
