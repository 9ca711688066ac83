"""The fault campaign's totals, printed at the end of a run (docs/reliability.md quotes them)."""

from __future__ import annotations

import pytest

from tests.faults._campaign import TALLY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TALLY:
        terminalreporter.section("fault campaign")
        for name, count in sorted(TALLY.items()):
            terminalreporter.write_line(f"{name}: {count}")
