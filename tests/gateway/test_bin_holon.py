"""The real `bin/holon`, as a user runs it (subprocess, the checkout's environment)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_register_and_show_through_bin_holon(tmp_path: Path) -> None:
    env = {**os.environ, "HOLON_HOME": str(tmp_path / "home")}
    for name in ("HOLON_DATABASE_URL", "HOLON_EXAMPLES"):
        env.pop(name, None)
    manifest = ROOT / "examples" / "agents" / "acme-invoice-reader.yaml"
    reg = subprocess.run(
        [str(ROOT / "bin" / "holon"), "agents", "register", str(manifest)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert reg.returncode == 0, reg.stderr
    # A fresh clone's first command finds the shipped examples installed.
    assert "first use of this store: installed the shipped examples" in reg.stderr
    assert "suite invoice-extract v1" in reg.stderr
    assert "is already registered, unchanged" in reg.stdout
    assert "setting up the environment" not in reg.stderr  # the fast path: no rebuild
    show = subprocess.run(
        [str(ROOT / "bin" / "holon"), "agents", "show", "acme/invoice-reader", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert show.returncode == 0, show.stderr
    view = json.loads(show.stdout)
    assert view["id"] == "acme/invoice-reader"
    assert view["manifest"]["capabilities"] == ["invoice.extract"]
    # An error exits 2 with no traceback.
    bad = subprocess.run(
        [str(ROOT / "bin" / "holon"), "agents", "show", "nobody/here"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr and "no agent 'nobody/here'" in bad.stderr
