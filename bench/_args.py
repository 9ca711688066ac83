"""The command line every bench starts from.

A bench's `--help` opens with the first line of its docstring; `--json` prints its
figures as one JSON object (what tests/bench runs and checks the shape of); a bench
that repeats its calls in rounds takes `--calls` and `--rounds`; one that compares
holon with another tool takes where that tool is installed and a switch to run
holon's side alone. Only the standard library is imported: a bench that times its
own imports pays nothing for this.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path


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


def compared_tool(
    parser: argparse.ArgumentParser, name: str, version: str, *, where: str, alone: str
) -> None:
    """`--NAME-dir`, where the pinned `version` of the tool compared with is (or gets)
    installed, by default under the temporary directory, kept between runs; and
    `--no-NAME`, holon's side alone (`alone` says what is then left out)."""
    parser.add_argument(
        f"--{name}-dir",
        type=Path,
        default=Path(tempfile.gettempdir()) / f"holon-bench-{name}" / version,
        help=where,
    )
    parser.add_argument(f"--no-{name}", action="store_true", help=f"holon's side alone: {alone}")
