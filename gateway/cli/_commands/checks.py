"""`holon path` and `holon checks grade`: the check DSL, locally, no store needed."""

from __future__ import annotations

import argparse
from pathlib import Path

from gateway.cli._app import command_group, common_options
from gateway.cli._context import Context


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    path = sub.add_parser(
        "path",
        parents=[common_options()],
        help="evaluate an RFC 9535 JSONPath query against a JSON or YAML file",
        description="Print every node QUERY matches in FILE with its normalized path. "
        "An invalid query exits 2 with a caret under the fault.",
    )
    path.add_argument("query", metavar="QUERY", help="a JSONPath query such as '$.items[*].sku'")
    path.add_argument("file", metavar="FILE", type=Path, help="a JSON (or YAML) document")
    path.set_defaults(handler=do_path)

    group = command_group(sub, "checks", "the check DSL")
    grade = group.add_parser(
        "grade",
        parents=[common_options()],
        help="grade one document against a list of checks",
        description="Grade DOCUMENT_FILE ({input, output, expected, usage, case}) against the "
        "checks in CHECKS_FILE (YAML or JSON, the suite `checks` syntax). Exit 0 when every "
        "check passes, 1 when some fail, 2 when the checks are invalid.",
    )
    grade.add_argument(
        "checks_file", metavar="CHECKS_FILE", type=Path, help="a YAML or JSON list of checks"
    )
    grade.add_argument(
        "document_file",
        metavar="DOCUMENT_FILE",
        type=Path,
        help="a JSON document {input, output, expected, usage, case}",
    )
    grade.set_defaults(handler=do_grade)


def do_path(ctx: Context) -> int:
    from evals.checks import cli_path, render_nodes

    nodes = cli_path(ctx.args.query, ctx.args.file)
    if ctx.out.json_mode:
        ctx.out.json(nodes)
    else:
        ctx.out.lines(render_nodes(nodes))
    return 0


def do_grade(ctx: Context) -> int:
    from evals.checks import cli_grade

    report = cli_grade(ctx.args.checks_file, ctx.args.document_file)
    if ctx.out.json_mode:
        ctx.out.json(report.to_json())
    else:
        ctx.out.lines(report.lines())
    return report.exit_code
