"""`holon db upgrade|status`: the store's schema revision."""

from __future__ import annotations

import argparse

from gateway.cli._app import common_options
from gateway.cli._context import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser("db", help="the store's schema (store only)")
    group = parser.add_subparsers(dest="db_command", metavar="ACTION", required=True)
    up = group.add_parser(
        "upgrade",
        parents=[common_options()],
        help="migrate the store to this holon's schema",
        description="Run the store's migrations up to the revision this holon needs.",
    )
    up.set_defaults(handler=do_upgrade)
    status = group.add_parser(
        "status", parents=[common_options()], help="show the store's schema revision"
    )
    status.set_defaults(handler=do_status)


def do_upgrade(ctx: Context) -> int:
    # records (SQLAlchemy, alembic) only when a db command runs: `holon --help` stays light.
    from records import open_engine, schema_status, upgrade

    engine = open_engine(ctx.settings.database_url)
    try:
        before = schema_status(engine)
        after = upgrade(engine)
    finally:
        engine.dispose()
    result = {
        "store": engine.url.render_as_string(hide_password=True),
        "from": before.current,
        "to": after.current,
        "changed": before.current != after.current,
    }
    if ctx.out.json_mode:
        ctx.out.json(result)
    elif result["changed"]:
        ctx.out.line(
            f"upgraded {result['store']} from {before.current or 'empty'} to {after.current}"
        )
    else:
        ctx.out.line(f"{result['store']} is up to date (revision {after.current})")
    return 0


def do_status(ctx: Context) -> int:
    from records import open_engine, schema_status

    engine = open_engine(ctx.settings.database_url)
    try:
        status = schema_status(engine)
    finally:
        engine.dispose()
    result = {
        "store": engine.url.render_as_string(hide_password=True),
        "current": status.current,
        "expected": status.head,
        "up_to_date": status.up_to_date,
    }
    if ctx.out.json_mode:
        ctx.out.json(result)
    else:
        ctx.out.fields(list(result.items()))
    return 0
