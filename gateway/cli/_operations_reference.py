"""docs/operations.md, generated from the operation table.

    python -m gateway.cli._operations_reference > docs/operations.md

Each operation of the table with its route, roles, CLI command, and every
request field: where it travels, its CLI flag, its type and help. A filter
added to a request type is documented by regenerating this page, and
tests/gateway/test_operations.py fails while the committed page is stale.

It lives with the CLI because the page names each operation's command, read from
the CLI's parser: the operation table below knows nothing of the doors that read it.
"""

from __future__ import annotations

import sys
from typing import Any

from gateway.cli._app import build_parser
from gateway.cli._operations import operation_commands
from gateway.operations import OPERATIONS, Field, Operation

__all__ = ["REGENERATE", "render"]

REGENERATE = "python -m gateway.cli._operations_reference > docs/operations.md"

_PREAMBLE = f"""\
# Operations

<!-- Generated from gateway.operations.OPERATIONS by `{REGENERATE}`. Do not edit. -->

The operations declared in the operation table (`gateway/operations`,
[architecture.md](architecture.md#operations)): for each, its route, the
roles that may call it, the CLI command that runs it, what it answers (its
response's JSON Schema: an entity of `schema/entities/`, a page of them, or a
view of `schema/responses/`), and its request's fields. One declaration gives
the route and its OpenAPI parameters, `HttpService`'s request, `StoreService`'s
work, the CLI's flags and output, and the console's filters, so what is listed
here is what every door accepts: a field's CLI flag and its API parameter take
the same values, and `in` says
where the API reads it (`path`, `query`, the JSON `body`, or the whole body as one
`document`; a `bearer` field is filled from who asks, a `local` one by the command on
this machine, for the store, and neither is sent). An operation with no route is
the store's alone: the CLI runs it as operator, and its `path` fields are the
command's positionals. The other routes are still written by hand
([gateway.md](gateway.md#routes)).
"""


def _type(field: Field) -> str:
    schema = field.json_schema
    if "enum" in schema:
        return " \\| ".join(f"`{v}`" for v in schema["enum"])
    text = str(schema.get("type", "string"))
    if "minimum" in schema and "maximum" in schema:
        text += f" {schema['minimum']}–{schema['maximum']}"
    if field.kind in ("bool", "int") and field.default is not None:
        shown = str(field.default).lower() if field.kind == "bool" else field.default
        text += f" (default {shown})"
    return text


def _flag(field: Field) -> str:
    if field.spec.where == "local":
        return "(the command's)"
    if not field.on_cli:
        return "(API only)"
    flag = field.flag
    shown = f"`{field.spec.metavar or field.name.upper()}`" if flag is None else f"`{flag}`"
    if field.spec.renamed is not None:
        shown += f" (was `--{field.spec.renamed}`)"
    return shown


def _size(count: int) -> str:
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def _limits(op: Operation[Any]) -> list[str]:
    """What bounds a request: its body's size, and how long a client waits for the answer."""
    said = []
    if op.routed and (op.located("body") or op.located("document")):
        bound = "HOLON_MAX_BODY_BYTES" if op.large_body else _size(op.max_body_bytes)
        said.append(f"Its body: at most {bound}.")
    if op.timeout_s is not None:
        said.append(f"`--gateway` waits up to {op.timeout_s:g} s for the answer.")
    return [" ".join(said), ""] if said else []


def _answers(op: Operation[Any]) -> str:
    """What the operation answers: its response schema, or a document's media types."""
    if op.response is not None:
        return f"Answers {op.response.about}."
    kinds = [m if s is None else f"{m} ({s.about})" for m, s in op.media_types]
    return "Answers the document in the format asked: " + ", ".join(kinds) + "."


def _section(op: Operation[Any], commands: dict[str, tuple[str, ...]]) -> list[str]:
    roles = op.roles if isinstance(op.roles, str) else ", ".join(sorted(op.roles))
    words = commands.get(op.name)
    cli = "(none)" if words is None else "`holon " + " ".join(words) + "`"
    route = f"`{op.method} {op.path}`" if op.routed else "no route (the store's CLI only)"
    if op.cli is None and words is not None:
        # A command written by hand runs it (`holon eval`): its flags are its own.
        cli += " (a command of its own: see [cli.md](cli.md))"
    lines = [
        f"## {op.name}",
        "",
        f"{route} · roles: {roles} · CLI: {cli}",
        "",
        op.summary[:1].upper() + op.summary[1:] + ".",
        "",
        _answers(op),
        "",
        *_limits(op),
    ]
    if not op.fields:
        return lines
    lines += ["| field | in | CLI | type | what |", "|---|---|---|---|---|"]
    for f in op.fields:
        renamed = "" if f.spec.renamed is None else f" (was `{f.spec.renamed}`)"
        help_text = f.spec.help.replace("|", "\\|")
        flag = _flag(f) if op.cli is not None else "–"
        lines.append(
            f"| `{f.name}`{renamed} | {f.spec.where} | {flag} | {_type(f)} | {help_text} |"
        )
    return [*lines, ""]


def render() -> str:
    commands = operation_commands(build_parser())
    out = [_PREAMBLE]
    for op in sorted(OPERATIONS, key=lambda o: o.name):
        out += _section(op, commands)
    return "\n".join(out).rstrip("\n") + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
