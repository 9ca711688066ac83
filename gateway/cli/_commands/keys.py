"""`holon keys list|rotate|jwks`: the store's certificate signing keys (docs/certificates.md).

Over a gateway (`--gateway URL`) `list` and `rotate` need an operator token;
`jwks` is public, as `/.well-known/jwks.json` is.
"""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli._operations import operation_group
from gateway.operations import KEYS_JWKS, KEYS_LIST, KEYS_ROTATE, Operation

ACTIONS: dict[str, Operation[Any]] = {"list": KEYS_LIST, "rotate": KEYS_ROTATE, "jwks": KEYS_JWKS}


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    operation_group(sub, "keys", "certificate signing keys", ACTIONS)
