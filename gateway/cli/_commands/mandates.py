"""`holon mandates grant|list|show|check|revoke`: a caller's policies.

Exit codes: 0 (and, for `check`, allowed), 1 a `check` that denies, 2 usage or
input errors (a bad mandate file names its line).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from gateway.cli._app import common_options, gateway_options, renamed_flag
from gateway.cli._commands.agents import agent_id
from gateway.cli._context import Context
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

    ls = group.add_parser("list", parents=both, help="mandates, with their holders and limits")
    ls.add_argument("--caller", metavar="NAME", help="only the mandates this caller holds")
    renamed_flag(ls, "--holder", "--caller", "caller", metavar="NAME")
    ls.add_argument("--all", action="store_true", help="include revoked mandates")
    ls.add_argument("--limit", type=int, default=100, help="page size (default 100)")
    ls.add_argument("--cursor", help="continue after a previous page")
    ls.set_defaults(handler=do_list)

    show = group.add_parser(
        "show",
        parents=both,
        help="one mandate and its document (or every revision)",
        description="The mandate's current document; with --revisions every revision "
        "granted, oldest first, with its time and who granted it (a token id, or local "
        "for the CLI on the store). Over a gateway a caller's token may read the "
        "revisions of the mandates it holds.",
    )
    show.add_argument("mandate", metavar="ID", help="the mandate's id")
    show.add_argument(
        "--revisions", action="store_true", help="every revision, with its time and granter"
    )
    show.set_defaults(handler=do_show)

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

    revoke = group.add_parser(
        "revoke", parents=both, help="revoke a mandate (kept, with its ledger rows)"
    )
    revoke.add_argument("mandate", metavar="ID", help="the mandate's id")
    revoke.set_defaults(handler=do_revoke)


def _status_word(view: dict[str, Any]) -> str:
    return "active" if view["active"] else "revoked"


def _budget_text(document: dict[str, Any]) -> str | None:
    budget = document.get("budget")
    return None if budget is None else f"${budget['amount_usd']}/{budget['period']}"


def _rate_text(document: dict[str, Any]) -> str | None:
    limit = document.get("rate_limit")
    if limit is None:
        return None
    return f"{limit['calls']}/{limit['per']}, burst {limit.get('burst', limit['calls'])}"


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


def do_list(ctx: Context) -> int:
    page = ctx.client().mandates.list(
        caller=ctx.args.caller,
        include_revoked=ctx.args.all,
        cursor=ctx.args.cursor,
        limit=ctx.args.limit,
    )
    if ctx.out.json_mode:
        ctx.out.json(page)
        return 0
    rows = []
    for view in page["items"]:
        document = view["mandate"]
        rows.append(
            (
                view["id"],
                view["holder"],
                document["capabilities"],
                document.get("agents", "any"),
                document.get("min_eval_score"),
                f"${document['max_cost_per_call_usd']}",
                _budget_text(document),
                document.get("expires_at"),
                _status_word(view),
            )
        )
    ctx.out.table(
        [
            "mandate",
            "holder",
            "capabilities",
            "agents",
            "min score",
            "cap/call",
            "budget",
            "expires",
            "status",
        ],
        rows,
        empty="no mandates (holon mandates grant FILE)",
    )
    if page["next_cursor"]:
        ctx.more(page["next_cursor"])
    return 0


def _show_revisions(ctx: Context) -> int:
    page = ctx.client().mandates.revisions(ctx.args.mandate)
    if ctx.out.json_mode:
        ctx.out.json(page)
        return 0
    rows = [
        (
            r["revision"],
            r["granted_at"],
            r["granted_by"] or "(before revisions were kept)",
            r["holder"],
            r["mandate"]["capabilities"],
            f"${r['mandate']['max_cost_per_call_usd']}",
            _budget_text(r["mandate"]),
            r["digest"][:12],
        )
        for r in page["items"]
    ]
    ctx.out.table(
        ["revision", "granted", "by", "holder", "capabilities", "cap/call", "budget", "digest"],
        rows,
        empty="no revisions",
    )
    return 0


def do_show(ctx: Context) -> int:
    if ctx.args.revisions:
        return _show_revisions(ctx)
    view = ctx.client().mandates.get(ctx.args.mandate)
    if ctx.out.json_mode:
        ctx.out.json(view)
        return 0
    document = view["mandate"]
    ctx.out.fields(
        [
            ("mandate", view["id"]),
            ("holder", view["holder"]),
            ("status", _status_word(view)),
            ("revision", view["revision"]),
            ("capabilities", document["capabilities"]),
            ("agents", document.get("agents", "any")),
            ("min_eval_score", document.get("min_eval_score")),
            ("min_capability_score", document.get("min_capability_score")),
            ("max_eval_age_days", document.get("max_eval_age_days")),
            ("deny_on_overfit", document.get("deny_on_overfit", False)),
            ("cap per call", f"${document['max_cost_per_call_usd']}"),
            ("timeout_s", document.get("timeout_s")),
            ("budget", _budget_text(document)),
            ("rate limit", _rate_text(document)),
            ("expires", document.get("expires_at")),
            ("granted", view["granted_at"]),
            ("updated", view["updated_at"]),
            ("revoked", view["revoked_at"]),
            ("digest", view["digest"]),
        ]
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


def do_revoke(ctx: Context) -> int:
    view = ctx.client().mandates.revoke(ctx.args.mandate)
    if ctx.out.json_mode:
        ctx.out.json(view)
    else:
        ctx.out.line(f"mandate {view['id']} ({view['holder']}) is revoked; its ledger rows stay")
    return 0
