"""The CLI's door onto the operation table: a command's flags and output from its operation.

A command made here parses the flags its request type declares, builds the
request (each field's check runs, named by its flag), asks the service (the
store, or a gateway), and shows the answer as the operation declares: one
JSON document with --json, else its table, fields or lines. Handlers made here
never branch on --json themselves; errors and exit codes come from the
exception raised (schema/errors.py), as for every command.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.cli._app import (
    Handler,
    command_group,
    common_options,
    gateway_options,
    renamed_flag,
)
from gateway.cli._context import Context
from gateway.operations import Cli, Field, Fields, Json, Lines, Operation, Render, Sections, Table
from schema.errors import checked

__all__ = ["Local", "add_flags", "command", "dest", "operation_commands", "runs", "show"]


def _no_values(ctx: Context) -> Mapping[str, Any]:
    return {}


def _as_given(ctx: Context, view: dict[str, Any]) -> dict[str, Any]:
    return view


@dataclass(frozen=True)
class Local:
    """What a command does on this machine around its operation: the arguments it adds
    (FILE, --from-env VAR), the request's values it reads itself rather than from a flag
    (a manifest from its file, with the file's lines in its errors; a secret from stdin),
    and `then`, what it makes of the answer before it is shown (`suites pull` writes the
    files, and shows where)."""

    add: Callable[[argparse.ArgumentParser], object]
    read: Callable[[Context], Mapping[str, Any]] = _no_values
    then: Callable[[Context, dict[str, Any]], dict[str, Any]] = _as_given


def add_flags(
    parser: argparse.ArgumentParser, op: Operation[Any], local: Local | None = None
) -> None:
    """The flags (and positionals) of `op`'s request, in declaration order; a command's
    own arguments (`local`) after its positionals, before the other flags."""
    fields = [f for f in op.fields if f.on_cli]
    for field in fields:
        if field.spec.where == "path":
            _add(parser, field)
    if local is not None:
        local.add(parser)
    for field in fields:
        if field.spec.where != "path":
            _add(parser, field)


def dest(field: Field) -> str:
    """Where argparse keeps a field: apart from the options every command takes (a request
    field named `token` is not the bearer token of `--token`)."""
    return "op_" + field.name


def _add(parser: argparse.ArgumentParser, field: Field) -> None:
    spec = field.spec
    text = spec.cli_help or spec.help
    flag = field.flag
    typed: dict[str, Any] = {} if spec.cli_type is None else {"type": spec.cli_type}
    if flag is None:  # a path field: a positional argument
        metavar = spec.metavar or field.name.upper()
        parser.add_argument(dest(field), metavar=metavar, help=text, **typed)
        return
    if field.kind == "bool":
        parser.add_argument(flag, dest=dest(field), action="store_true", help=text)
        return
    kw: dict[str, Any] = {"dest": dest(field), "help": text, **typed}
    if field.kind == "int":
        kw.update(type=int, default=field.default if spec.cli_default is None else spec.cli_default)
    if spec.choices:
        kw["choices"] = spec.choices  # argparse shows them: {allow,deny}
    else:
        kw["metavar"] = spec.metavar or field.name.upper()
    if spec.required:
        kw["required"] = True
    parser.add_argument(flag, **kw)
    if spec.renamed is not None:
        renamed_flag(parser, "--" + spec.renamed, flag, dest(field), metavar=kw.get("metavar"))


def command(
    group: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    op: Operation[Any],
    *,
    parents: Sequence[argparse.ArgumentParser],
    switch: tuple[str, Operation[Any]] | None = None,
    local: Local | None = None,
) -> argparse.ArgumentParser:
    """The command `name` running `op`; `switch` (a flag, another operation taking the same
    request) runs that operation instead when the flag is given (`mandates show --revisions`);
    `local`: what the command does here around it."""
    cli = _cli(op)
    parser: argparse.ArgumentParser = group.add_parser(
        name, parents=list(parents), help=cli.help, description=cli.description
    )
    add_flags(parser, op, local)
    if switch is not None:
        flag, other = switch
        if other.request is not op.request:
            raise TypeError(f"{flag}: {other.name} takes another request than {op.name}")
        parser.add_argument(flag, action="store_true", help=_cli(other).help)

    def handler(ctx: Context) -> int:
        chosen = op
        if switch is not None and getattr(ctx.args, switch[0].lstrip("-").replace("-", "_")):
            chosen = switch[1]
        values = {f.name: getattr(ctx.args, dest(f)) for f in chosen.fields if f.on_cli}
        if local is not None:
            values.update(local.read(ctx))
        request = chosen.build(values, lambda f: f.flag or f.name)
        # An operation with no route is the store's: refused through a gateway, by name.
        service = (
            ctx.service() if chosen.routed else ctx.store_service(parser.prog.split(" ", 1)[1])
        )
        view = service.call(chosen, request)
        if local is not None:
            view = local.then(ctx, view)
        chosen_cli = _cli(chosen)
        show(ctx, chosen_cli.render, view)
        return 0 if chosen_cli.passed is None else checked(chosen_cli.passed(view))

    # `operations`: what the command runs, for the references and the table's tests.
    ran = ((op.name, ()),) if switch is None else ((op.name, ()), (switch[1].name, (switch[0],)))
    parser.set_defaults(handler=handler, operations=ran)
    return parser


def _cli(op: Operation[Any]) -> Cli:
    if op.cli is None:
        raise TypeError(f"{op.name} declares no command: a command of its own runs it (runs())")
    return op.cli


def runs(parser: argparse.ArgumentParser, *ops: Operation[Any], handler: Handler) -> None:
    """A command written by hand: its `handler`, and the `ops` it runs (`holon eval` runs
    evals.start with --gateway), so the references list it as their command."""
    parser.set_defaults(handler=handler, operations=tuple((op.name, ()) for op in ops))


def operation_commands(parser: argparse.ArgumentParser) -> dict[str, tuple[str, ...]]:
    """Each operation the CLI runs, and the command words (and switch) that run it."""
    found: dict[str, tuple[str, ...]] = {}

    def walk(node: argparse.ArgumentParser, words: tuple[str, ...]) -> None:
        for name, switch in node.get_default("operations") or ():
            found[name] = (*words, *switch)
        for action in node._actions:
            if isinstance(action, argparse._SubParsersAction):
                for word, child in action.choices.items():
                    walk(child, (*words, word))

    walk(parser, ())
    return found


def show(ctx: Context, render: Render, view: dict[str, Any]) -> None:
    """The answer as the operation declares it (one JSON document with --json)."""
    out = ctx.out
    if out.json_mode or isinstance(render, Json):
        out.json(render.json(view) if isinstance(render, Lines) and render.json else view)
        return
    if isinstance(render, Sections):
        for n, part in enumerate(render.parts):
            if n and render.gap:
                out.line()
            show(ctx, part, view)
    elif isinstance(render, Table):
        titles = [c.title for c in render.columns]
        rows = [[c.value(row) for c in render.columns] for row in view[render.items]]
        out.table(titles, rows, empty=render.empty)
        if render.items == "items" and view.get("next_cursor"):
            ctx.more(view["next_cursor"])
    elif isinstance(render, Fields):
        shown = view if render.of is None else view[render.of]
        out.fields([*((c.title, c.value(shown)) for c in render.fields), *render.extra(shown)])
    else:
        for warning in render.warnings(view):
            out.warn(warning)
        out.lines(render.lines(view))
        for note in render.notes(view):
            out.note(note)


def operation_group(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    help: str,
    actions: Mapping[str, Operation[Any]],
) -> None:
    """`holon NAME ACTION`, each action one operation's command, on the store or over a
    gateway (`holon keys`, `holon tokens`: nothing of their own around the operations)."""
    both = [common_options(), gateway_options()]
    group = command_group(sub, name, help)
    for action, op in actions.items():
        command(group, action, op, parents=both)
