"""Every command README.md and docs/ show runs, in a fresh store, and does what the page says.

One test per code block: its commands run in the page's order in one fresh
session (tests/docs/_session.py), each as its entry in tests/docs/_table.py
says, with the exit code the page shows or allows, a console block's output
compared exactly, and a shell block's comment checked concretely.

To add a command to a page: add its entry to `_table.COMMANDS`; the first
test below lists the shown commands that have none.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from tests.docs._blocks import Block, Shown, all_blocks, all_commands, commands, unlabeled
from tests.docs._session import normalise, session
from tests.docs._steps import Step
from tests.docs._table import COMMANDS


def coverage(
    shown: list[Shown], table: Mapping[tuple[str, str], Step]
) -> tuple[list[str], list[str]]:
    """(shown commands without an entry, entries no page shows), each as a line to print."""
    keys = {command.key for command in shown}
    unknown = [f"{c.where}: {c.text}" for c in shown if c.key not in table]
    stale = [f"{page}: {text}" for page, text in table if (page, text) not in keys]
    return unknown, stale


def test_every_shown_command_has_an_entry_and_every_entry_is_shown() -> None:
    shown = all_commands()
    unknown, stale = coverage(shown, COMMANDS)
    if unknown:
        pytest.fail(
            "shown commands the doc test cannot run (add them to tests/docs/_table.py):\n"
            + "\n".join(unknown),
            pytrace=False,
        )
    if stale:
        pytest.fail(
            "tests/docs/_table.py entries no page shows any more:\n" + "\n".join(stale),
            pytrace=False,
        )
    assert len(shown) >= 35


def test_no_block_hides_commands_from_the_doc_test() -> None:
    hidden = [f"{block.where}: {line}" for block in all_blocks() for line in unlabeled(block)]
    assert not hidden, "commands in a block without a language (label it ```sh):\n" + "\n".join(
        hidden
    )


def _blocks_with_commands() -> list[object]:
    params: list[object] = []
    for block in all_blocks():
        shown = commands(block)
        if not shown:
            continue
        steps = [COMMANDS.get(c.key) for c in shown]
        slow = any(step is not None and step.slow for step in steps)
        marks = [pytest.mark.slow] if slow else []
        params.append(pytest.param(block, id=block.where, marks=marks))
    return params


@pytest.mark.parametrize("block", _blocks_with_commands())
def test_shown_commands_do_what_the_page_says(
    block: Block, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    shown = commands(block)
    missing = [c for c in shown if c.key not in COMMANDS]
    if missing:
        pytest.fail(f"{missing[0].where}: no entry in tests/docs/_table.py", pytrace=False)
    steps = [COMMANDS[c.key] for c in shown]
    tmp = tmp_path_factory.mktemp("doc")
    with session(tmp, examples=any(step.examples for step in steps)) as s:
        monkeypatch.chdir(s.work)
        for command, step in zip(shown, steps, strict=True):
            _run(s, command, step)


def _run(s: object, command: Shown, step: Step) -> None:
    from tests.docs._session import Session

    assert isinstance(s, Session)
    for name, content in step.files.items():
        s.write(name, content())
    if step.before is not None:
        step.before(s)
    result = step.run(s, command)
    said = f"{command.where}: `{command.text}`"
    codes = (command.status,) if command.status is not None else step.code
    if result.code not in codes:
        pytest.fail(
            f"{said} exited {result.code}, the page says {' or '.join(map(str, codes))}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}",
            pytrace=False,
        )
    if command.console:
        assert command.output is not None
        actual = normalise(result.stdout + result.stderr, s.tmp, step.varies)
        page = normalise(command.output, varies=step.varies)
        if actual != page:
            pytest.fail(
                f"{said} printed other output than the page shows\n"
                f"page:\n{page}\nactual:\n{actual}",
                pytrace=False,
            )
    if step.check is not None:
        try:
            step.check(s, result)
        except AssertionError as exc:
            pytest.fail(f"{said} did not do what the page says: {exc}", pytrace=False)
