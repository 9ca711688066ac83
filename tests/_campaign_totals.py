"""The campaigns' totals at the end of a run, in one process or spread over pytest-xdist workers.

The bad-input campaign counts into `tests.campaign._tally.TALLY` and the fault
campaign into `tests.faults._campaign.TALLY` (docs/reliability.md quotes both).
Under xdist those counters fill up in the worker processes, so each worker
sends a plain copy to the controller in `config.workeroutput`, the controller
adds them up as workers finish, and prints the sums.

This is a plugin registered by tests/conftest.py (`pytest_plugins`) rather than
hooks in tests/campaign/ and tests/faults/ conftest files: the xdist controller
collects nothing, so it loads only the conftest files on the paths it is
given, and a plain `bin/test` would never see those two.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import pytest

# Where each campaign counts. Read from sys.modules only: a process that ran
# none of a campaign's tests has nothing to report, and the fault campaign's
# module is too heavy to import just to find that out.
BAD_INPUT_MODULE = "tests.campaign._tally"
FAULTS_MODULE = "tests.faults._campaign"

WORKEROUTPUT_KEY = "holon_campaign_totals"


@dataclass
class Totals:
    """Both campaigns' counts, as their modules keep them."""

    bad_input: defaultdict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    faults: Counter[str] = field(default_factory=Counter)
    workers_lost: int = 0  # xdist workers that died before sending theirs
    workers_seen: set[str] = field(default_factory=set)

    def add_local(self) -> None:
        """Add what the campaigns counted in this process."""
        module = sys.modules.get(BAD_INPUT_MODULE)
        if module is not None:
            for campaign, counts in module.TALLY.items():
                self.bad_input[campaign].update(counts)
        module = sys.modules.get(FAULTS_MODULE)
        if module is not None:
            self.faults.update(module.TALLY)

    def to_wire(self) -> dict[str, Any]:
        # execnet serialises exact dicts, not Counter or defaultdict.
        return {
            "bad_input": {c: dict(counts) for c, counts in self.bad_input.items()},
            "faults": dict(self.faults),
        }

    def add_wire(self, wire: dict[str, Any]) -> None:
        # Counts add up. A value a test sets rather than adds to (test_executor_faults
        # sets "executor: fault agents") stays right because all of a file's tests
        # run on one worker (--dist loadfile, as bin/test runs them).
        for campaign, counts in wire["bad_input"].items():
            self.bad_input[campaign].update(counts)
        self.faults.update(wire["faults"])

    def bad_input_lines(self) -> list[str]:
        out = []
        for campaign in sorted(self.bad_input):
            counts = self.bad_input[campaign]
            total = sum(counts.values())
            parts = ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
            out.append(f"{campaign}: {total} inputs ({parts})")
        return out

    def faults_lines(self) -> list[str]:
        return [f"{name}: {count}" for name, count in sorted(self.faults.items())]


# The controller's sums of what its workers sent.
_FROM_WORKERS = pytest.StashKey[Totals]()


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_FROM_WORKERS] = Totals()


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker; xdist sends this dict when the hook returns
        totals = Totals()
        totals.add_local()
        workeroutput[WORKEROUTPUT_KEY] = totals.to_wire()


@pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest without xdist has no such spec
def pytest_testnodedown(node: Any, error: object | None) -> None:
    merged = node.config.stash[_FROM_WORKERS]
    # A worker stopped by Ctrl-C goes down twice (finished, then errored).
    if node.gateway.id in merged.workers_seen:
        return
    merged.workers_seen.add(node.gateway.id)
    wire = getattr(node, "workeroutput", {}).get(WORKEROUTPUT_KEY)
    if wire is None:
        merged.workers_lost += 1
    else:
        merged.add_wire(wire)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    # In one process the counts are this process's; on an xdist controller, which
    # runs no tests, they are the workers'.
    totals = Totals()
    totals.add_local()
    from_workers = config.stash[_FROM_WORKERS]
    totals.add_wire(from_workers.to_wire())
    lost = from_workers.workers_lost
    note = f"(short: {lost} xdist worker(s) died before sending their counts)"
    for title, found in (
        ("bad input campaign: inputs tried", totals.bad_input_lines()),
        ("fault campaign", totals.faults_lines()),
    ):
        if found:
            terminalreporter.section(title)
            for line in found:
                terminalreporter.write_line(line)
            if lost:
                terminalreporter.write_line(note)
