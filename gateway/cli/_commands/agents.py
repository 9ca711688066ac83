"""`holon agents register|list|show|disable|enable|secret`."""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Mapping
from typing import Any

from gateway.cli._app import command_group, common_options, gateway_options
from gateway.cli._context import Context
from gateway.cli._operations import Local, command
from gateway.operations import (
    AGENTS_DISABLE,
    AGENTS_ENABLE,
    AGENTS_LIST,
    AGENTS_REGISTER,
    AGENTS_SECRET_CLEAR,
    AGENTS_SECRET_SET,
    AGENTS_SHOW,
)
from gateway.operations import agent_id as agent_id  # the commands' argparse type
from schema.errors import UsageError

MAX_SECRET_CHARS = 4096


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = command_group(sub, "agents", "register and inspect agents")
    both = [common_options(), gateway_options()]

    command(group, "register", AGENTS_REGISTER, parents=both, local=MANIFEST_FILE)
    command(group, "list", AGENTS_LIST, parents=both)
    command(group, "show", AGENTS_SHOW, parents=both)
    command(group, "disable", AGENTS_DISABLE, parents=both)
    command(group, "enable", AGENTS_ENABLE, parents=both)

    secret_group = command_group(group, "secret", "the agent's bearer secret (write-only)")
    command(secret_group, "set", AGENTS_SECRET_SET, parents=both, local=SECRET_INPUT)
    command(secret_group, "clear", AGENTS_SECRET_CLEAR, parents=both)


def _manifest(ctx: Context) -> Mapping[str, Any]:
    from agents import load_manifest

    # Read and validated here, so a bad file is named with its line, whichever the service.
    return {"manifest": load_manifest(ctx.args.file).to_json()}


MANIFEST_FILE = Local(
    add=lambda p: p.add_argument("file", metavar="FILE", help="manifest (YAML or JSON)"),
    read=_manifest,
)


def _read_secret(ctx: Context) -> Mapping[str, Any]:
    if ctx.args.from_env:
        value = ctx.environ.get(ctx.args.from_env)
        if value is None:
            raise UsageError(f"the variable {ctx.args.from_env} is not set")
    elif ctx.stdin.isatty():
        value = getpass.getpass(f"secret for {ctx.args.op_agent}: ")
    else:
        value = ctx.stdin.read(MAX_SECRET_CHARS + 2)
    value = value.rstrip("\r\n")
    if not value:
        raise UsageError("the secret is empty")
    return {"secret": value}  # the operation checks its shape (printable ASCII, no spaces)


SECRET_INPUT = Local(
    add=lambda p: p.add_argument(
        "--from-env", metavar="VAR", help="read the secret from this variable"
    ),
    read=_read_secret,
)
