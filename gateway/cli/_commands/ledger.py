"""`holon ledger`: live calls and their decisions, newest first (the operation `ledger.list`);
`holon canaries`: the canaries graded inside live traffic (`canaries.list`), apart."""

from __future__ import annotations

import argparse

from gateway.cli._app import common_options, gateway_options
from gateway.cli._operations import command
from gateway.operations import CANARIES_LIST, LEDGER_LIST


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command(sub, "ledger", LEDGER_LIST, parents=[common_options(), gateway_options()])
    # Beside the ledger: what canaries cost the operator (never a caller's row).
    command(sub, "canaries", CANARIES_LIST, parents=[common_options(), gateway_options()])
