"""The command line every bench starts from.

A bench's `--help` opens with the first line of its docstring; `--json` prints its
figures as one JSON object (what tests/bench runs and checks the shape of); a bench
that repeats its calls in rounds takes `--calls` and `--rounds`. Only argparse is
imported: a bench that times its own imports pays nothing for this.
"""

from __future__ import annotations

import argparse


def bench_parser(
    doc: str | None,
    *,
    calls: int | None = None,
    calls_help: str | None = None,
    rounds: int | None = None,
) -> argparse.ArgumentParser:
    """The parser of the bench documented by `doc`, with `--json`, and `--calls` and
    `--rounds` when their default is given."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n")[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    if calls is not None:
        parser.add_argument("--calls", type=int, default=calls, help=calls_help)
    if rounds is not None:
        parser.add_argument("--rounds", type=int, default=rounds)
    return parser
