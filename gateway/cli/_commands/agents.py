"""`holon agents register|list|show|disable|enable|secret`."""

from __future__ import annotations

import argparse
import getpass

from gateway.cli._app import common_options, gateway_options
from gateway.cli._context import Context
from gateway.cli._operations import command
from gateway.operations import AGENTS_DISABLE, AGENTS_ENABLE, AGENTS_LIST, AGENTS_SHOW
from gateway.operations import agent_id as agent_id  # the commands' argparse type
from schema.errors import UsageError

_AGENT_ID = "ORG/NAME"
MAX_SECRET_CHARS = 4096


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("agents", help="register and inspect agents")
    group = parser.add_subparsers(dest="agents_command", metavar="ACTION", required=True)
    both = [common_options(), gateway_options()]

    reg = group.add_parser(
        "register",
        parents=both,
        help="register an agent, or a new version of one, from a manifest",
        description="Register an agent from a YAML or JSON manifest. Re-registering with a "
        "new version updates it and keeps the history; a version keeps its manifest.",
    )
    reg.add_argument("file", metavar="FILE", help="manifest (YAML or JSON)")
    reg.set_defaults(handler=do_register)

    command(group, "list", AGENTS_LIST, parents=both)

    command(group, "show", AGENTS_SHOW, parents=both)

    command(group, "disable", AGENTS_DISABLE, parents=both)
    command(group, "enable", AGENTS_ENABLE, parents=both)

    secret = group.add_parser("secret", help="the agent's bearer secret (write-only)")
    secret_group = secret.add_subparsers(dest="secret_command", metavar="ACTION", required=True)
    s_set = secret_group.add_parser(
        "set",
        parents=both,
        help="set the secret sent as 'Authorization: Bearer' (read from stdin or a prompt)",
        description="Store the agent's bearer secret, encrypted. It is never shown again. "
        "The secret is read from --from-env VAR, else from standard input "
        "(a hidden prompt on a terminal).",
    )
    s_set.add_argument("agent", type=agent_id, metavar=_AGENT_ID, help="the agent's id")
    s_set.add_argument("--from-env", metavar="VAR", help="read the secret from this variable")
    s_set.set_defaults(handler=do_secret_set)
    s_clear = secret_group.add_parser("clear", parents=both, help="remove the secret")
    s_clear.add_argument("agent", type=agent_id, metavar=_AGENT_ID, help="the agent's id")
    s_clear.set_defaults(handler=do_secret_clear)


def do_register(ctx: Context) -> int:
    from agents import load_manifest

    manifest = load_manifest(ctx.args.file)
    result = ctx.client().register_agent(manifest.to_json(), source=str(ctx.args.file))
    if ctx.out.json_mode:
        ctx.out.json(result)
        return 0
    for warning in result["warnings"]:
        ctx.out.warn(warning["message"])
    status = result["status"]
    previous = result["previous_version"]
    words = {
        "created": f"registered {manifest.id} {manifest.version}",
        "updated": f"updated {manifest.id} from {previous} to {manifest.version}",
        "unchanged": f"{manifest.id} {manifest.version} is already registered, unchanged",
        "reactivated": f"{manifest.id} is back at version {manifest.version} (was {previous})",
    }
    ctx.out.line(words[status])
    return 0


def _read_secret(ctx: Context) -> str:
    if ctx.args.from_env:
        value = ctx.environ.get(ctx.args.from_env)
        if value is None:
            raise UsageError(f"the variable {ctx.args.from_env} is not set")
    elif ctx.stdin.isatty():
        value = getpass.getpass(f"secret for {ctx.args.agent}: ")
    else:
        value = ctx.stdin.read(MAX_SECRET_CHARS + 2)
    value = value.rstrip("\r\n")
    if not value:
        raise UsageError("the secret is empty")
    return value  # the client checks its shape (printable ASCII, no spaces)


def do_secret_set(ctx: Context) -> int:
    secret = _read_secret(ctx)
    ctx.client().set_agent_secret(ctx.args.agent, secret)
    if ctx.out.json_mode:
        ctx.out.json({"agent": ctx.args.agent, "secret_set": True})
    else:
        ctx.out.line(f"secret set for {ctx.args.agent} (stored encrypted; it is never shown)")
    return 0


def do_secret_clear(ctx: Context) -> int:
    removed = ctx.client().clear_agent_secret(ctx.args.agent)
    if ctx.out.json_mode:
        ctx.out.json({"agent": ctx.args.agent, "secret_set": False, "removed": removed})
    else:
        ctx.out.line(f"secret {'removed' if removed else 'was not set'} for {ctx.args.agent}")
    return 0
