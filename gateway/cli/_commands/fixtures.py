"""`holon fixtures render`: one generated fixture, written for people to look at."""

from __future__ import annotations

import argparse
from pathlib import Path

from gateway.cli._app import command_group, common_options
from gateway.cli._context import Context
from schema.errors import InputError
from schema.jsontext import loads


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = command_group(sub, "fixtures", "fixture generators")
    render = group.add_parser(
        "render",
        parents=[common_options()],
        help="write one generated fixture (a PDF invoice, a ticket) to a file",
        description="Generate GENERATOR's instance for --seed and write it to -o FILE: the PDF "
        "bytes for a PDF generator, else its JSON value. Prints its ground truth.",
    )
    render.add_argument("generator", metavar="GENERATOR", help="e.g. invoice, ticket")
    render.add_argument("--seed", type=int, required=True, help="0 to 2**64-1")
    render.add_argument(
        "-o", "--output", type=Path, required=True, metavar="FILE", help="where to write it"
    )
    render.add_argument("--params", metavar="JSON", help="generator params as a JSON object")
    render.set_defaults(handler=do_render)

    ls = group.add_parser("list", parents=[common_options()], help="the registered generators")
    ls.set_defaults(handler=do_list)


def do_render(ctx: Context) -> int:
    from evals.fixtures import render_to_file

    params = None
    if ctx.args.params:
        try:
            params = loads(ctx.args.params)
        except ValueError as exc:
            raise InputError(f"--params is not JSON: {exc}") from None
    result = render_to_file(ctx.args.generator, ctx.args.seed, params, ctx.args.output)
    if ctx.out.json_mode:
        ctx.out.json(result)
    else:
        ctx.out.line(
            f"wrote {result['path']} ({result['media_type']}, {result['bytes']} bytes, "
            f"sha256 {result['sha256'][:16]}…)"
        )
        ctx.out.fields(
            [(k, v) for k, v in result["truth"].items()]
            if isinstance(result["truth"], dict)
            else [("truth", result["truth"])]
        )
    return 0


def do_list(ctx: Context) -> int:
    from evals import fixture_generators

    rows = fixture_generators()  # as `holon catalog` lists them
    if ctx.out.json_mode:
        ctx.out.json({"generators": rows})
    else:
        ctx.out.table(
            ["generator", "version", "produces", "description"],
            [(r["name"], r["version"], r["media_type"], r["description"]) for r in rows],
        )
    return 0
