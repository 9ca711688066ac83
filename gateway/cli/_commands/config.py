"""`holon config`: the effective settings and where each came from."""

from __future__ import annotations

import argparse

from gateway.cli._app import common_options
from gateway.cli._context import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "config",
        parents=[common_options()],
        help="print the effective settings",
        description="Print every HOLON_* setting, its effective value and its source.",
    )
    parser.set_defaults(handler=show)


def show(ctx: Context) -> int:
    rows = ctx.settings.describe()
    if ctx.out.json_mode:
        ctx.out.json({"settings": rows})
        return 0
    ctx.out.table(
        ["setting", "value", "source"],
        [(r["env"], r["value"], r["source"]) for r in rows],
    )
    return 0
