"""The docs that are generated or quoted from the code stay true to it.

- docs/cli.md is generated from the parser and must be current;
- every command appears in the docs;
- every graded example in docs/checks.md gives the status and detail it shows.
"""

from __future__ import annotations

import argparse
import difflib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from evals.checks import compile_checks, grade
from gateway.cli import build_parser
from gateway.cli._reference import REGENERATE, commands, render, usage
from schema import jsontext
from schema.documents import parse_document
from tests.docs._table import sample_document

ROOT = Path(__file__).resolve().parents[2]
CLI_MD = ROOT / "docs" / "cli.md"
CHECKS_MD = ROOT / "docs" / "checks.md"


# -- docs/cli.md ----------------------------------------------------------------------------


def test_cli_reference_is_current() -> None:
    expected = render()
    actual = CLI_MD.read_text(encoding="utf-8") if CLI_MD.exists() else ""
    if actual != expected:
        diff = "".join(
            list(
                difflib.unified_diff(
                    actual.splitlines(keepends=True),
                    expected.splitlines(keepends=True),
                    "docs/cli.md",
                    "render()",
                )
            )[:40]
        )
        pytest.fail(
            f"docs/cli.md is stale: regenerate it with `.venv/bin/{REGENERATE}`\n{diff}",
            pytrace=False,
        )


def test_cli_reference_ignores_the_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "20")
    narrow = render()
    monkeypatch.setenv("COLUMNS", "500")
    assert render() == narrow
    # Long usage lines are one line, not wrapped the way argparse wraps them.
    line = (
        "holon agents list [-h] [--json] [--debug] [--home DIR] [--gateway URL] "
        "[--token-file PATH] [--token TOKEN] [--org ORG]"
    )
    assert line in narrow


def test_usage_lines_say_what_argparse_says() -> None:
    # argparse's own usage, unwrapped, is the reference for our formatting.
    for command in commands():
        formatter = argparse.HelpFormatter(command.name, width=100_000)
        formatter.add_usage(
            command.parser.usage,
            command.parser._actions,
            command.parser._mutually_exclusive_groups,
            prefix="",
        )
        assert usage(command) == formatter.format_help().strip(), command.name


def test_the_reference_covers_every_command_and_option() -> None:
    text = render()
    sections = re.split(r"^#{2,4} ", text, flags=re.MULTILINE)
    by_name = {section.split("\n", 1)[0]: section for section in sections[1:]}
    found = list(commands())
    assert len(found) >= 20
    for command in found:
        assert command.name in by_name, f"no section for {command.name}"
        section = by_name[command.name]
        for action in command.parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue
            for option in action.option_strings:
                assert f"`{option}" in section or f", {option}" in section, (command.name, option)
            if action.help:
                assert " ".join(action.help.split()) in section, (command.name, action.dest)


def test_the_reference_is_printed_by_its_module() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli._reference"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=True,
        timeout=60,
    )
    assert done.stdout == render()


def test_every_command_group_is_documented() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    reference = CLI_MD.read_text(encoding="utf-8") if CLI_MD.exists() else ""
    groups = sorted(command.name for command in commands() if len(command.words) == 1)
    assert "holon agents" in groups
    missing = [name for name in groups if name not in readme and name not in reference]
    assert not missing, f"not in README.md or docs/cli.md: {missing}"
    headings = set(re.findall(r"^#{2,4} (holon[a-z -]*)$", reference, flags=re.MULTILINE))
    leaves = {command.name for command in commands(build_parser()) if not command.is_group}
    assert not leaves - headings, f"no section in docs/cli.md: {sorted(leaves - headings)}"


# -- docs/checks.md: every graded example is real -------------------------------------------

_ROW = re.compile(r"^\| `(\{.*\})` \| `([a-z-]+)` \| `(.*)` \|$")


def _sample_document() -> object:
    return jsontext.loads(sample_document())


def _graded_rows() -> list[tuple[int, str, str, str]]:
    rows = []
    for number, line in enumerate(CHECKS_MD.read_text(encoding="utf-8").splitlines(), 1):
        match = _ROW.match(line)
        if match:
            rows.append((number, match.group(1), match.group(2), match.group(3)))
    return rows


def test_checks_page_has_graded_examples_for_every_predicate() -> None:
    from evals.checks import COMBINATORS, PREDICATES, QUANTIFIERS

    rows = "\n".join(check for _, check, _, _ in _graded_rows())
    for key in (*PREDICATES, *COMBINATORS, *QUANTIFIERS, "normalize", "mostly", "allow_empty"):
        assert f"{key}:" in rows, f"docs/checks.md has no graded example of {key}"


@pytest.mark.parametrize(
    ("line", "check", "status", "detail"), _graded_rows(), ids=lambda v: str(v)[:60]
)
def test_checks_page_examples_grade_as_shown(
    line: int, check: str, status: str, detail: str
) -> None:
    document = parse_document(check, f"docs/checks.md:{line}")
    compiled = compile_checks([document.value], document=document)
    result = grade(compiled, _sample_document()).results[0]
    assert (result.status, result.detail) == (status, detail), f"docs/checks.md:{line}"
