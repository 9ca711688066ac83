from __future__ import annotations

import pytest

from tests.campaign import _tally


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    found = _tally.lines()
    if found:
        terminalreporter.section("bad input campaign: inputs tried")
        for line in found:
            terminalreporter.write_line(line)
