"""`holon db upgrade|status`: the store's schema revision."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from gateway.cli._app import command_group, common_options
from gateway.cli._context import Context

if TYPE_CHECKING:
    from sqlalchemy.engine import Engine

T = TypeVar("T")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = command_group(sub, "db", "the store's schema (store only)")
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


def _on_store(ctx: Context, work: Callable[[Engine], T]) -> tuple[str, T]:
    """What `work` reads or does on the store's engine, and the store's URL (no password)."""
    # records (SQLAlchemy, alembic) only when a db command runs: `holon --help` stays light.
    from records import open_engine

    engine = open_engine(ctx.settings.database_url)
    try:
        done = work(engine)
    finally:
        engine.dispose()
    return engine.url.render_as_string(hide_password=True), done


def do_upgrade(ctx: Context) -> int:
    from records import schema_status, upgrade

    store, (before, after) = _on_store(ctx, lambda e: (schema_status(e), upgrade(e)))
    result = {
        "store": store,
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
    from records import schema_status

    store, status = _on_store(ctx, schema_status)
    result = {
        "store": store,
        "current": status.current,
        "expected": status.head,
        "up_to_date": status.up_to_date,
        # A store a release ahead that still serves this holon (docs/deploy.md, "Upgrades").
        "serves_this": status.serves_this,
    }
    if ctx.out.json_mode:
        ctx.out.json(result)
    else:
        ctx.out.fields(list(result.items()))
    return 0
