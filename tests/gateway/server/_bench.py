"""Run one of bench/'s scripts as docs/performance.md does, at a smoke size, for its JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]


def run_bench(script: str, *args: str) -> dict[str, Any]:
    """`script` (a path under the checkout) run with `args` and `--json`: what it printed.
    A failed run fails the test with the end of its stderr."""
    done = subprocess.run(
        [sys.executable, script, *args, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result
