"""`server_process`: a gateway process of its own hides its start-up heap from full
collections and shortens the GIL's switch interval; an app in someone else's process
changes neither."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import gc, sys
from starlette.testclient import TestClient
from gateway.server import create_app
from gateway.settings import Settings
settings = Settings.from_env({"HOLON_HOME": sys.argv[1], "HOLON_EXAMPLES": "off",
                              "HOLON_PROBE_INTERVAL_S": "0"})
app = create_app(settings, eval_workers=0, server_process=sys.argv[2] == "on")
with TestClient(app) as client:
    assert client.get("/healthz").status_code == 200
    print(gc.get_freeze_count(), sys.getswitchinterval())
"""


def _tuned(tmp_path: Path, flag: str) -> tuple[int, float]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / flag), flag],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    frozen, interval = done.stdout.split()[-2:]
    return int(frozen), float(interval)


def test_a_server_process_tunes_itself(tmp_path: Path) -> None:
    frozen, interval = _tuned(tmp_path, "on")
    assert frozen > 10_000  # the modules, the app, the store
    assert interval == 0.001


def test_an_app_in_someone_elses_process_leaves_it_alone(tmp_path: Path) -> None:
    assert _tuned(tmp_path, "off") == (0, 0.005)
