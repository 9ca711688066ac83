"""docs/cli.md, generated from the `holon` argument parser.

    python -m gateway.cli._reference > docs/cli.md

The page is a pure function of `build_parser()`: usage lines are formatted
here rather than by argparse, whose wrapping follows the terminal width
(`COLUMNS`), so the page is the same on every machine and
`tests/gateway/test_docs.py` can insist that the committed file is current
(it also checks each usage line against argparse's own, unwrapped; mutually
exclusive groups are not rendered here, so that test fails if one appears).
Commands are listed alphabetically at every level.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass

from gateway.cli._app import build_parser

__all__ = ["REGENERATE", "Command", "commands", "main", "render", "usage"]

REGENERATE = "python -m gateway.cli._reference > docs/cli.md"

_PREAMBLE = f"""\
# CLI reference

<!-- Generated from gateway.cli.build_parser() by `{REGENERATE}`. Do not edit. -->

Every command and its options, generated from the parser, so this page is
what `holon … --help` says. Commands are listed alphabetically. Every command
also takes `-h`/`--help`.

- `--json` (on every command) prints one JSON document on stdout, errors
  included (`{{"error": {{"code", "message", "details"}}}}`), so a script reads
  one stream.
- `--debug` shows tracebacks and debug logs on stderr.
- `--gateway URL`, where offered, talks to a running gateway (`holon gateway
  serve`) instead of the store (or `HOLON_GATEWAY_URL`; see
  [settings](settings.md)), with the token in `HOLON_TOKEN` or the first line
  of `--token-file PATH` (`-`: stdin). `--token TOKEN` works too but warns:
  the process list shows it. The output is the same either way, and the
  token's role decides what may be done (a refusal exits 2).
  On the store the CLI acts as operator. Commands that need the store and
  lack these options (`holon tokens`, `holon suites add`, `holon worker`,
  `holon gateway serve`, …) refuse while `HOLON_GATEWAY_URL` is set.

Exit codes: 0 ok; 1 the thing checked failed (some check failed, a suite
below its threshold, a mandate denied); 2 usage or input error, or a
refusal; 3 environment error (store, gateway or agent unreachable, an agent
failed a live call, or a bug in holon); 130 interrupted.
`holon` without a command prints its help and exits 2.
"""


@dataclass(frozen=True)
class Command:
    """One parser in the tree: `holon`, a group such as `holon agents`, or a leaf command."""

    words: tuple[str, ...]
    parser: argparse.ArgumentParser
    summary: str

    @property
    def name(self) -> str:
        return " ".join(("holon", *self.words))

    @property
    def children(self) -> dict[str, tuple[argparse.ArgumentParser, str]]:
        """Sub-commands by name, with the one-line help their group gives them."""
        found: dict[str, tuple[argparse.ArgumentParser, str]] = {}
        for action in self.parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
                for name, child in action.choices.items():
                    found[name] = (child, helps.get(name, ""))
        return found

    @property
    def is_group(self) -> bool:
        return bool(self.children)


def commands(parser: argparse.ArgumentParser | None = None) -> Iterator[Command]:
    """Every parser under `holon` (itself first), depth first, children alphabetically."""
    root = Command((), parser or build_parser(), "")
    stack = [root]
    while stack:
        command = stack.pop()
        yield command
        children = sorted(command.children.items(), reverse=True)
        stack.extend(
            Command((*command.words, name), child, summary) for name, (child, summary) in children
        )


def _metavar(action: argparse.Action) -> str:
    if action.metavar is not None:
        return str(action.metavar)
    if action.choices is not None:  # a sub-command's choices are its names
        return "{" + ",".join(str(choice) for choice in action.choices) + "}"
    return action.dest.upper() if action.option_strings else action.dest


def _arguments(action: argparse.Action) -> str:
    """What follows an option or stands for a positional, by `nargs`."""
    metavar = _metavar(action)
    nargs = action.nargs
    if nargs == 0:
        return ""
    if nargs is None or nargs == 1:
        return metavar
    if nargs == argparse.OPTIONAL:
        return f"[{metavar}]"
    if nargs == argparse.ZERO_OR_MORE:
        return f"[{metavar} ...]"
    if nargs == argparse.ONE_OR_MORE:
        return f"{metavar} [{metavar} ...]"
    if nargs in (argparse.PARSER, argparse.REMAINDER):
        return f"{metavar} ..."
    if isinstance(nargs, int):
        return " ".join([metavar] * nargs)
    return metavar  # pragma: no cover - argparse has no other nargs


def _shown(action: argparse.Action) -> bool:
    return action.help != argparse.SUPPRESS


def usage(command: Command) -> str:
    """One usage line, as argparse writes it on an infinitely wide terminal.

    Options first (bracketed unless required), then positionals, each option
    by its first spelling.
    """
    parts = [command.name]
    actions = [a for a in command.parser._actions if _shown(a)]
    for action in actions:
        if not action.option_strings:
            continue
        arguments = _arguments(action)
        text = action.option_strings[0] + (f" {arguments}" if arguments else "")
        parts.append(text if action.required else f"[{text}]")
    parts.extend(_arguments(action) for action in actions if not action.option_strings)
    return " ".join(parts)


def _help(action: argparse.Action, prog: str) -> str:
    """An action's help with argparse's `%(name)s` expansions applied."""
    text = action.help or ""
    if "%" not in text:
        return text
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    if params.get("choices") is not None:
        params["choices"] = ", ".join(str(choice) for choice in params["choices"])
    params["prog"] = prog
    return text % params


def _cell(text: str) -> str:
    """Text for a Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _argument_rows(command: Command) -> list[str]:
    rows = []
    for action in command.parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if not _shown(action):
            continue
        if action.option_strings:
            arguments = _arguments(action)
            label = ", ".join(action.option_strings) + (f" {arguments}" if arguments else "")
        else:
            label = _arguments(action)
        text = _help(action, command.name)
        if action.required and action.option_strings:
            text = f"{text} (required)" if text else "required"
        rows.append(f"| `{label}` | {_cell(text)} |")
    return rows


def _anchor(name: str) -> str:
    """GitHub's heading anchor for `holon agents secret set`: `holon-agents-secret-set`."""
    return name.replace(" ", "-")


def _section(command: Command) -> list[str]:
    # `holon` and its commands are level 2, their sub-commands 3, one level deeper 4.
    level = "#" * max(2, min(len(command.words) + 1, 4))
    lines = [f"{level} {command.name}", ""]
    description = command.parser.description or command.summary
    if description:
        lines += [" ".join(description.split()), ""]
    lines += ["```", usage(command), "```", ""]
    rows = _argument_rows(command)
    if rows:
        lines += ["| argument | what |", "|---|---|", *rows, ""]
    children = sorted(command.children.items())
    if children:
        lines += ["| command | what |", "|---|---|"]
        for name, (_, summary) in children:
            full = f"{command.name} {name}"
            lines.append(f"| [`{full}`](#{_anchor(full)}) | {_cell(summary)} |")
        lines.append("")
    return lines


def render(parser: argparse.ArgumentParser | None = None) -> str:
    """docs/cli.md: the preamble, then one section per command, ending in one newline."""
    lines = [_PREAMBLE]
    for command in commands(parser):
        lines += _section(command)
    return "\n".join(lines).rstrip("\n") + "\n"


def main() -> None:
    sys.stdout.write(render())


if __name__ == "__main__":
    main()
