"""The CLI's output layer: the only place holon prints.

Human output is tables and lines (rich, plain when not a terminal); `--json`
prints one JSON document on stdout. Errors go to stderr for people and, with
`--json`, as the API's error body on stdout, so scripts read one stream.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, TextIO

from schema.errors import HolonError
from schema.jsontext import dumps

if TYPE_CHECKING:
    from rich.console import Console


class Output:
    def __init__(
        self,
        *,
        json_mode: bool = False,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.json_mode = json_mode
        self.stdout = stdout if stdout is not None else sys.stdout
        self.stderr = stderr if stderr is not None else sys.stderr

    # rich loads when something is first printed for people: `--help`, and a `--json`
    # run that prints only its document, never import it.
    @cached_property
    def console(self) -> Console:
        from rich.console import Console

        # Not a terminal (a pipe, a file, a test): wide enough that digests
        # and paths stay on one line, so output greps and diffs well.
        width = None if self.stdout.isatty() else 200
        return Console(file=self.stdout, highlight=False, soft_wrap=True, width=width)

    @cached_property
    def err_console(self) -> Console:
        from rich.console import Console

        return Console(file=self.stderr, highlight=False, soft_wrap=True)

    @property
    def interactive(self) -> bool:
        return self.stdout.isatty()

    # -- data ---------------------------------------------------------------

    def json(self, payload: Any) -> None:
        self.stdout.write(dumps(payload) + "\n")
        self.stdout.flush()

    def line(self, text: str = "") -> None:
        """A plain line for people (nothing in --json mode). `text` is not markup."""
        if not self.json_mode:
            self.console.print(escape(text))

    def lines(self, texts: Iterable[str]) -> None:
        for text in texts:
            self.line(text)

    def fields(self, pairs: Sequence[tuple[str, Any]]) -> None:
        """`key: value` lines, aligned."""
        if self.json_mode or not pairs:
            return
        width = max(len(k) for k, _ in pairs)
        for key, value in pairs:
            self.line(f"{key + ':':<{width + 1}} {_text(value)}")

    def table(
        self, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, empty: str = ""
    ) -> None:
        if self.json_mode:
            return
        rows = list(rows)
        if not rows:
            if empty:
                self.line(empty)
            return
        # rich's tables and progress bars load on first use: start-up pays only for the console.
        from rich import box
        from rich.table import Table

        table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*(escape(_text(cell)) for cell in row))
        self.console.print(table)

    # -- progress (stderr) --------------------------------------------------

    @contextlib.contextmanager
    def progress(self, description: str, total: int) -> Iterator[Callable[..., None]]:
        """Yields `update(done, passed, spent=None)`: a bar on a terminal, plain lines otherwise.

        Plain lines come at every tenth of the work, so a log stays short.
        Nothing is shown in --json mode.
        """
        if self.json_mode or total <= 0:
            yield lambda done, passed, spent=None: None
            return
        with self._logs_on_their_own_lines(), self._drawn(description, total) as update:
            yield update

    @contextlib.contextmanager
    def _logs_on_their_own_lines(self) -> Iterator[None]:
        """While progress is drawn, the CLI's log handler writes through the stderr console:
        a warning (a check that raised, a store outage) then prints whole, above the bar
        or between the plain lines, never into the middle of either."""
        swapped: list[tuple[logging.StreamHandler[Any], Any]] = []
        lines = _ConsoleLines(self.err_console)
        for handler in logging.getLogger().handlers:
            if getattr(handler, "_holon", False) and isinstance(handler, logging.StreamHandler):
                swapped.append((handler, handler.setStream(lines)))
        try:
            yield
        finally:
            for handler, stream in swapped:
                handler.setStream(stream)
            lines.flush()

    @contextlib.contextmanager
    def _drawn(self, description: str, total: int) -> Iterator[Callable[..., None]]:
        if self.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[passed]} passed"),
                TextColumn("{task.fields[spent]}"),
                TimeRemainingColumn(),
            )
            with Progress(*columns, console=self.err_console, transient=True) as bar:
                task = bar.add_task(description, total=total, passed=0, spent="")

                def update(done: int, passed: int, spent: object = None) -> None:
                    money = "" if spent is None else f"${spent}"
                    bar.update(task, completed=done, passed=passed, spent=money)

                yield update
            return
        step = max(1, total // 10)

        shown = 0

        def plain(done: int, passed: int, spent: object = None) -> None:
            nonlocal shown
            # Updates may skip numbers (group commits): show each tenth once.
            if done // step > shown // step or done == total and shown != total:
                shown = done
                money = "" if spent is None else f", ${spent} spent"
                self.note(f"{description}: {done}/{total} done, {passed} passed{money}")

        yield plain

    # -- diagnostics (stderr) -----------------------------------------------

    def warn(self, message: str) -> None:
        self.err_console.print(f"warning: {escape(message)}", style="yellow")

    def note(self, message: str) -> None:
        """Progress and hints for people; stderr, so stdout stays the result."""
        self.err_console.print(escape(message))

    def error(self, error: HolonError) -> None:
        if self.json_mode:
            self.json(error.to_body())
            return
        self.err_console.print(f"error: {escape(str(error))}", style="red")
        for problem in error.details.get("errors", [])[1:6]:
            where = ":".join(
                str(problem[k]) for k in ("file", "line", "column") if problem.get(k) is not None
            )
            path = problem.get("path", "")
            self.err_console.print(
                f"  also {escape(where)}: {escape(path)}: {escape(problem['message'])}"
            )
        if error.hint:
            self.err_console.print(f"hint: {escape(error.hint)}")


class _ConsoleLines:
    """A text stream for a log handler that prints each whole line through a console (the
    console's lock and its live display keep the line whole)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.pending = ""

    def write(self, text: str) -> int:
        # The handler writes a record and its terminator under its own lock.
        *whole, self.pending = (self.pending + text).split("\n")
        for line in whole:
            self.console.out(line, highlight=False)
        return len(text)

    def flush(self) -> None:
        if self.pending:
            line, self.pending = self.pending, ""
            self.console.out(line, highlight=False)


def _text(value: Any) -> str:
    if value is None:
        return "-"
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if isinstance(value, list | tuple):
        return ", ".join(_text(v) for v in value) if value else "-"
    if isinstance(value, dict):
        return dumps(value)
    return str(value)


def escape(text: str) -> str:
    """rich's markup escaped (what a console prints is markup), loaded with the consoles."""
    from rich.markup import escape as markup_escape

    return markup_escape(text)
