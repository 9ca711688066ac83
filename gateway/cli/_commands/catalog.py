"""`holon catalog`: what checks, suites and manifests may name, from the code's registries."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gateway.cli._app import common_options
from gateway.cli._context import Context

if TYPE_CHECKING:
    from records import Store


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "catalog",
        parents=[common_options()],
        help="the check DSL's predicates, installed suites' extensions, fixture generators "
        "and agent protocols",
        description="List what checks, suites and manifests may name: the check DSL's "
        "predicates, combinators and quantifiers with what each takes and its modifiers, the "
        "normalisers; the trusted graders, generators and loaders the installed suites name "
        "under "
        "`extensions:` (read from the store; none when there is no store); the fixture "
        "generators; the agent protocols.",
    )
    parser.set_defaults(handler=do_catalog)


def _store(ctx: Context) -> Store | None:
    """The store, when there is one here: an embedded store not yet created is none (the
    catalog creates nothing), and with a gateway set the store is not this machine's."""
    if ctx.on_gateway:
        ctx.out.note("a gateway is set: the catalog lists no installed suite's extensions")
        return None
    path = ctx.settings.database_path
    if ctx.settings.embedded and path is not None and not path.is_file():
        return None
    return ctx.store_service("catalog").store


def do_catalog(ctx: Context) -> int:
    from evals import catalog

    result = catalog(_store(ctx))
    if ctx.out.json_mode:
        ctx.out.json(result)
        return 0
    _render(ctx, result)
    return 0


def _words(ctx: Context, title: str, rows: list[dict[str, Any]]) -> None:
    ctx.out.line(title)
    ctx.out.table(
        ["name", "takes", "holds", "modifiers"],
        [(w["name"], w["takes"], w["holds"], w["modifiers"]) for w in rows],
    )
    ctx.out.line()


def _render(ctx: Context, result: dict[str, Any]) -> None:
    checks = result["checks"]
    _words(ctx, "check predicates", checks["predicates"])
    _words(ctx, "check combinators", checks["combinators"])
    _words(ctx, "check quantifiers", checks["quantifiers"])
    ctx.out.line("check modifiers")
    ctx.out.table(["name", "takes"], [(m["name"], m["takes"]) for m in checks["modifiers"]])
    ctx.out.line()
    ctx.out.fields([("normalizers", checks["normalizers"])])
    ctx.out.line()
    ctx.out.line("trusted extensions of installed suites")
    extensions = result["extensions"]
    if not extensions["store"]:
        ctx.out.line("none: no store here")
    ctx.out.table(
        ["suite", "version", "kind", "name", "file", "sha256"],
        [
            (e["suite"], e["version"], e["kind"], e["name"], e["file"], e["sha256"])
            for e in extensions["items"]
        ],
        empty="none: no installed suite names extensions" if extensions["store"] else "",
    )
    ctx.out.line()
    ctx.out.line("fixture generators")
    ctx.out.table(
        ["name", "version", "produces", "description"],
        [(g["name"], g["version"], g["media_type"], g["description"]) for g in result["fixtures"]],
    )
    ctx.out.line()
    ctx.out.line("agent protocols")
    ctx.out.table(
        ["name", "manifest section", "card"],
        [(p["name"], p["section"], p["card"]) for p in result["protocols"]],
    )
