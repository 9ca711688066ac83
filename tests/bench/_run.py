"""Run a bench's entry script as its user does, for its `--json` output."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def run_bench(script: str, *args: str, home: Path, timeout: float = 280) -> dict[str, Any]:
    """`script --json ARGS` in a fresh process, HOLON_HOME `home`; its one JSON object.
    A failed run fails the test with the end of its stderr."""
    done = subprocess.run(
        [sys.executable, script, *args, "--json"],
        cwd=ROOT,
        env=dict(os.environ, HOLON_HOME=str(home), NO_COLOR="1"),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result
