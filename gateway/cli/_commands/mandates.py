"""`holon mandates grant|list|show|check|revoke`: a caller's policies.

Exit codes: 0 (and, for `check`, allowed), 1 a `check` that denies, 2 usage or
input errors (a bad mandate file names its line).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gateway.cli._app import command_group, common_options, gateway_options
from gateway.cli._context import Context
from gateway.cli._operations import Local, command
from gateway.operations import (
    MANDATES_CHECK,
    MANDATES_GRANT,
    MANDATES_LIST,
    MANDATES_REVISIONS,
    MANDATES_REVOKE,
    MANDATES_SHOW,
)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    group = command_group(sub, "mandates", "grant, inspect, dry-run and revoke mandates")

    command(group, "grant", MANDATES_GRANT, parents=both, local=MANDATE_FILE)
    command(group, "list", MANDATES_LIST, parents=both)
    command(group, "show", MANDATES_SHOW, parents=both, switch=("--revisions", MANDATES_REVISIONS))
    command(group, "check", MANDATES_CHECK, parents=both)
    command(group, "revoke", MANDATES_REVOKE, parents=both)


def _mandate(ctx: Context) -> Mapping[str, Any]:
    from gateway.mandates import load_mandate

    # Validated here first, so a bad file is named with its line, whichever the service.
    mandate = load_mandate(ctx.args.file)
    assert mandate.document is not None
    return {"document": mandate.document}


MANDATE_FILE = Local(
    add=lambda p: p.add_argument(
        "file", metavar="FILE", type=Path, help="a mandate (YAML or JSON)"
    ),
    read=_mandate,
)
