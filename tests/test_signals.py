"""The test run's own processes: Ctrl-C reaches what the tests start (tests/conftest.py)."""

from __future__ import annotations

import subprocess
import sys


def test_a_process_the_tests_start_handles_ctrl_c_as_python_does() -> None:
    """Even when the run itself was started with SIGINT ignored (a background job of a
    shell without job control), the processes the tests start handle it by default."""
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    assert shown.stdout.strip() == "True"
