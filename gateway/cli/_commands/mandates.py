"""`holon mandates grant|list|show|check|revoke`: a caller's policies.

Exit codes: 0 (and, for `check`, allowed), 1 a `check` that denies, 2 usage or
input errors (a bad mandate file names its line).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gateway.cli._app import common_options, gateway_options
from gateway.cli._commands.agents import agent_id
from gateway.cli._context import Context
from gateway.cli._operations import command
from gateway.operations import MANDATES_LIST, MANDATES_REVISIONS, MANDATES_REVOKE, MANDATES_SHOW
from schema.errors import checked
from schema.jsontext import dumps


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    parser = sub.add_parser("mandates", help="grant, inspect, dry-run and revoke mandates")
    group = parser.add_subparsers(dest="mandates_command", metavar="ACTION", required=True)

    grant = group.add_parser(
        "grant",
        parents=both,
        help="grant a mandate from a file, or a new revision of one",
        description="Validate the mandate in FILE (YAML or JSON, schema/mandate.schema.json) "
        "and store it under its id: a new mandate, or a new revision of the one with that id "
        "(a revoked one is reinstated). A holder may hold several mandates.",
    )
    grant.add_argument("file", metavar="FILE", type=Path, help="a mandate (YAML or JSON)")
    grant.set_defaults(handler=do_grant)

    command(group, "list", MANDATES_LIST, parents=both)
    command(group, "show", MANDATES_SHOW, parents=both, switch=("--revisions", MANDATES_REVISIONS))

    check = group.add_parser(
        "check",
        parents=both,
        help="dry-run a mandate's decision on an agent and capability (exit 1 on deny)",
        description="Decide as a live call would, without calling anyone or reserving "
        "budget: allow, or deny with the reason and the numbers that decided it "
        "(score, minimum, age, spent; with a rate limit, the calls it allows now). "
        "Exit 0 on allow, 1 on deny.",
    )
    check.add_argument("mandate", metavar="ID", help="the mandate's id")
    check.add_argument(
        "--agent", type=agent_id, metavar="ORG/NAME", required=True, help="the agent to call"
    )
    check.add_argument("--capability", metavar="CAP", required=True, help="the capability")
    check.set_defaults(handler=do_check)

    command(group, "revoke", MANDATES_REVOKE, parents=both)


def do_grant(ctx: Context) -> int:
    result = ctx.client().mandates.grant_file(ctx.args.file)
    if ctx.out.json_mode:
        ctx.out.json(result)
        return 0
    view = result["mandate"]
    words = {
        "created": "granted",
        "updated": f"updated to revision {view['revision']}:",
        "reinstated": f"reinstated at revision {view['revision']}:",
        "unchanged": "unchanged:",
    }
    ctx.out.line(
        f"{words.get(result['status'], result['status'])} mandate {view['id']} for {view['holder']}"
    )
    return 0


_DECISION_KEYS = {
    "agent",
    "agent_version",
    "capability",
    "mandate",
    "decision",
    "reason",
    "budget",
    "rate_limit",
}


def numbers_text(values: dict[str, Any], skip: set[str]) -> str:
    return ", ".join(f"{k}={_plain(v)}" for k, v in values.items() if k not in skip)


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else dumps(value)


def do_check(ctx: Context) -> int:
    decision = ctx.client().mandates.check(ctx.args.mandate, ctx.args.agent, ctx.args.capability)
    allowed = decision["decision"] == "allow"
    if ctx.out.json_mode:
        ctx.out.json(decision)
        return checked(allowed)
    subject = f"{decision['agent']} {decision['agent_version']} for {decision['capability']}"
    if allowed:
        ctx.out.line(f"allow: mandate {decision['mandate']} allows {subject}")
    else:
        ctx.out.line(f"deny ({decision['reason']}): mandate {decision['mandate']} on {subject}")
    numbers = numbers_text(decision, _DECISION_KEYS)
    if numbers:
        ctx.out.line(f"  {numbers}")
    budget = decision.get("budget")
    if budget is not None:
        ctx.out.line(f"  budget: {numbers_text(budget, {'mandate'})}")
    rate = decision.get("rate_limit")
    if rate is not None:
        ctx.out.line(f"  rate limit: {numbers_text(rate, set())}")
    return checked(allowed)
