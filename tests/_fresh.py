"""A fresh interpreter, for checks of what importing does: the test process has long
since imported everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fresh_python(code: str, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run `code` (`python -c`) from the checkout with `args`; its stdout, once it
    exited 0 (its stderr is the assertion's message otherwise)."""
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=dict(os.environ if env is None else env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def loaded_after(code: str, watched: Sequence[str]) -> list[str]:
    """Which of the `watched` modules a fresh interpreter has loaded once it ran `code`,
    in the order given."""
    shown = f"print(json.dumps([m for m in {list(watched)!r} if m in sys.modules]))"
    probe = f"{code}\nimport json, sys\n{shown}"
    found = json.loads(fresh_python(probe).splitlines()[-1])
    assert isinstance(found, list)
    return [str(m) for m in found]
