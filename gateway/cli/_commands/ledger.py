"""`holon ledger`: live calls and their decisions, newest first (the operation `ledger.list`)."""

from __future__ import annotations

import argparse

from gateway.cli._app import common_options, gateway_options
from gateway.cli._operations import command
from gateway.operations import LEDGER_LIST


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    command(sub, "ledger", LEDGER_LIST, parents=[common_options(), gateway_options()])
