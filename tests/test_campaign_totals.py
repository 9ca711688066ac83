"""The campaigns' totals print the same whether pytest runs in one process or on xdist workers.

Each test runs a real pytest session in a subprocess and reads its terminal
summary (tests/_campaign_totals.py prints it; docs/reliability.md quotes it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A fast subset with counts in both campaigns: two bad-input files and two
# fault trials (SQLite only), about 5 s of tests.
SUBSET = [
    "tests/campaign/test_yaml_hostile.py",
    "tests/campaign/test_home.py",
    "tests/faults/test_sigkill.py",
    "-k",
    "test_yaml_hostile or test_home or reclaims",
]

SECTION = re.compile(r"^=+ (.+?) =+$")


def _pytest(*args: str, cwd: Path = ROOT, pythonpath: Path | None = None) -> tuple[int, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        # This test may itself run on an xdist worker; the inner session is its own.
        if not k.startswith(("PYTEST_XDIST_", "PYTEST_ADDOPTS", "PYTEST_CURRENT_TEST"))
    }
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stdout + done.stderr


def _probe_session(tmp_path: Path, *args: str) -> tuple[int, str]:
    """pytest run in `tmp_path` with `args` and the totals plugin, over the test files
    there and one more whose test counts three `probe` inputs."""
    (tmp_path / "test_counts.py").write_text(
        "from tests.campaign._tally import record\n\n"
        "def test_counts() -> None:\n"
        "    for _ in range(3):\n"
        "        record('probe', 'ok')\n"
    )
    plugin = ("-p", "tests._campaign_totals", "--basetemp", str(tmp_path / "t"))
    return _pytest(*args, *plugin, cwd=tmp_path, pythonpath=ROOT)


def _sections(output: str) -> dict[str, list[str]]:
    """The terminal summary's sections: title -> lines."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        title = SECTION.match(line)
        if title:
            current = sections.setdefault(title.group(1), [])
        elif current is not None:
            current.append(line)
    return sections


def _counts(lines: list[str]) -> list[int]:
    return [int(n) for line in lines for n in re.findall(r"\b(\d+)\b", line)]


@pytest.mark.slow
def test_xdist_workers_send_their_totals_to_the_controller(tmp_path: Path) -> None:
    code, one = _pytest("-n", "0", "--basetemp", str(tmp_path / "one"), *SUBSET)
    assert code == 0, one
    code, spread = _pytest(
        "-p", "xdist", "-n", "2", "--dist", "loadfile", "--basetemp", str(tmp_path / "xd"), *SUBSET
    )
    assert code == 0, spread
    assert "bringing up nodes" in spread, spread  # it really ran on workers

    one_sections, spread_sections = _sections(one), _sections(spread)
    bad_input = one_sections["bad input campaign: inputs tried"]
    faults = one_sections["fault campaign"]
    assert bad_input == [
        "HOLON_HOME and full disks: 23 inputs (exit 3 23)",
        "hostile YAML (named): 24 inputs (loaded 1, refused 23)",
    ]
    assert faults == ["cells checked: 96", "cells done before the resume: 0", "trials: 2"]
    assert spread_sections["bad input campaign: inputs tried"] == bad_input
    assert spread_sections["fault campaign"] == faults
    assert sum(_counts(bad_input)) > 0 and sum(_counts(faults)) > 0


def test_totals_print_without_xdist(tmp_path: Path) -> None:
    # The plugin's xdist hook is optional: pytest without xdist loads it and prints.
    code, output = _probe_session(tmp_path, "-p", "no:xdist")
    assert code == 0, output
    assert _sections(output)["bad input campaign: inputs tried"][0] == "probe: 3 inputs (ok 3)"
    assert "fault campaign" not in _sections(output)


@pytest.mark.slow
def test_a_crashed_worker_makes_the_totals_say_they_are_short(tmp_path: Path) -> None:
    (tmp_path / "test_dies.py").write_text(
        "import os\n\nfrom tests.campaign._tally import record\n\n"
        "def test_dies() -> None:\n"
        "    record('probe', 'lost')\n"
        "    os._exit(1)\n"
    )
    code, output = _probe_session(
        tmp_path, "-n", "2", "--dist", "loadfile", "--max-worker-restart", "0"
    )
    assert code == 1, output  # the crash is a failure
    assert "crashed while running" in output, output
    assert _sections(output)["bad input campaign: inputs tried"][:2] == [
        "probe: 3 inputs (ok 3)",
        "(short: 1 xdist worker(s) died before sending their counts)",
    ], output
