"""`holon schema [NAME]`: the JSON Schemas holon ships (its contracts), listed or printed."""

from __future__ import annotations

import argparse
from typing import Any

from gateway.cli._app import common_options
from gateway.cli._context import Context
from schema.errors import UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "schema",
        parents=[common_options()],
        help="list the JSON Schemas of holon's files and wire formats, or print one",
        description="Without NAME, list every shipped JSON Schema (manifest, suite, case, "
        "mandate, report, certificate, compare, revocations, the API's entities and the "
        "capabilities' input and output) with its $id and title. With NAME, print that "
        "schema as shipped; with --json, as one JSON document. An unknown NAME exits 2 "
        "with the list of names.",
    )
    parser.add_argument(
        "name",
        metavar="NAME",
        nargs="?",
        help="a name as listed (mandate, entities/ledger-row, capabilities/"
        "ticket.classify.input), its file under schema/ or its $id",
    )
    parser.set_defaults(handler=do_schema)


def _listing() -> list[dict[str, Any]]:
    from schema import load_schema, schema_names

    return [
        {"name": name, "id": load_schema(name).get("$id"), "title": load_schema(name).get("title")}
        for name in schema_names()
    ]


def _resolve(asked: str) -> str:
    """The schema's name from its name, its file (`mandate.schema.json`) or its `$id`."""
    import difflib

    from schema import SCHEMA_DIR, load_schema, schema_names, schema_path

    names = schema_names()
    if asked in names:
        return asked
    for name in names:
        file = schema_path(name).relative_to(SCHEMA_DIR).as_posix()
        if asked in (file, f"schema/{file}", load_schema(name).get("$id")):
            return name
    close = difflib.get_close_matches(asked, names, n=1, cutoff=0.6)
    guess = f"did you mean {close[0]!r}? " if close else ""
    raise UsageError(
        f"no schema {asked!r}; {guess}schemas: {', '.join(names)}",
        details={"names": list(names)},
        hint="`holon schema` lists them with their titles",
    )


def do_schema(ctx: Context) -> int:
    from schema import load_schema, schema_path

    asked: str | None = ctx.args.name
    if asked is None:
        rows = _listing()
        if ctx.out.json_mode:
            ctx.out.json({"schemas": rows})
        else:
            ctx.out.table(
                ["name", "title", "$id"], [(r["name"], r["title"], r["id"]) for r in rows]
            )
        return 0
    name = _resolve(asked)
    if ctx.out.json_mode:
        ctx.out.json(load_schema(name))
    else:  # the file as shipped, so `holon schema mandate > mandate.schema.json` copies it
        text = schema_path(name).read_text(encoding="utf-8")
        ctx.out.stdout.write(text if text.endswith("\n") else text + "\n")
        ctx.out.stdout.flush()
    return 0
