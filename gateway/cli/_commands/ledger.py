"""`holon ledger`: live calls and their decisions, newest first."""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli._app import common_options, gateway_options
from gateway.cli._context import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    ledger = sub.add_parser(
        "ledger",
        parents=both,
        help="live calls and their decisions, newest first",
        description="One row per live call: caller, agent, capability, the mandate and its "
        "revision that decided it (`ID rN`), decision (with the deny reason), the eval whose "
        "record it read, outcome and cost. A caller's token reads its own rows.",
    )
    ledger.add_argument("--caller", metavar="C", help="only this caller's calls")
    ledger.add_argument("--mandate", metavar="M", help="only calls under this mandate")
    ledger.add_argument("--agent", metavar="A", help="only calls to this agent")
    # records.DECISION_CODES, spelled out: building the parser never imports the store.
    ledger.add_argument("--decision", choices=("allow", "deny"), help="only allowed or denied")
    ledger.add_argument("--limit", type=int, default=100, help="page size (default 100)")
    ledger.add_argument("--cursor", help="continue after a previous page")
    ledger.set_defaults(handler=do_ledger)


def _mandate_text(row: dict[str, Any]) -> str | None:
    """`id rN`: the mandate and the revision that decided the call."""
    if row["mandate"] is None or row["mandate_revision"] is None:
        return None if row["mandate"] is None else str(row["mandate"])
    return f"{row['mandate']} r{row['mandate_revision']}"


def do_ledger(ctx: Context) -> int:
    page = ctx.client().ledger(
        caller=ctx.args.caller,
        mandate_id=ctx.args.mandate,
        agent_id=ctx.args.agent,
        decision=ctx.args.decision,
        cursor=ctx.args.cursor,
        limit=ctx.args.limit,
    )
    if ctx.out.json_mode:
        ctx.out.json(page)
        return 0
    rows = [
        (
            row["at"],
            row["caller"],
            row["agent"],
            row["capability"],
            _mandate_text(row),
            row["decision"] if row["reason"] is None else f"{row['decision']}: {row['reason']}",
            row["record_eval_id"],
            row["outcome"] or row["status"],
            f"${row['cost_usd']}",
        )
        for row in page["items"]
    ]
    ctx.out.table(
        [
            "time",
            "caller",
            "agent",
            "capability",
            "mandate",
            "decision",
            "record",
            "outcome",
            "cost",
        ],
        rows,
        empty="no live calls yet",
    )
    if page["next_cursor"]:
        ctx.more(page["next_cursor"])
    return 0
