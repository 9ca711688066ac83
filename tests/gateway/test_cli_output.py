"""The CLI's output layer: log records during progress print on lines of their own."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator

import pytest

from gateway.cli._output import Output

# Cursor movement, erasing and colours: what a live bar writes besides its text.
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def cli_log(request: pytest.FixtureRequest) -> Iterator[io.StringIO]:
    """A handler like the CLI's own (`_holon`), on a stream the test picks."""
    stream: io.StringIO = request.param()
    handler = logging.StreamHandler(stream)
    handler._holon = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    # The one the CLI configured last (an earlier test's `run`) stands aside meanwhile.
    earlier = [h for h in root.handlers if getattr(h, "_holon", False)]
    for h in earlier:
        root.removeHandler(h)
    root.addHandler(handler)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        for h in earlier:
            root.addHandler(h)


@pytest.mark.parametrize("cli_log", [Terminal, io.StringIO], indirect=True)
def test_a_warning_during_progress_is_a_line_of_its_own(cli_log: io.StringIO) -> None:
    output = Output(stdout=io.StringIO(), stderr=cli_log)
    with output.progress("eval ev_1", 10) as update:
        for done in range(1, 11):
            update(done, done)
            if done in (3, 7):
                logging.getLogger("evals.checks._grade").warning("check 'c' raised KeyError")
    text = ANSI.sub("", cli_log.getvalue()).replace("\r", "\n")
    warnings = [line for line in text.split("\n") if "WARNING" in line]
    assert warnings == ["WARNING evals.checks._grade: check 'c' raised KeyError"] * 2
    # After progress the handler writes to its stream again, as it did.
    handler = next(h for h in logging.getLogger().handlers if getattr(h, "_holon", False))
    assert isinstance(handler, logging.StreamHandler) and handler.stream is cli_log
