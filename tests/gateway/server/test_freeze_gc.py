"""`freeze_gc`: a gateway process of its own hides its start-up heap from full collections."""

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
app = create_app(settings, eval_workers=0, freeze_gc=sys.argv[2] == "on")
with TestClient(app) as client:
    assert client.get("/healthz").status_code == 200
    print(gc.get_freeze_count())
"""


def _frozen(tmp_path: Path, flag: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(tmp_path / flag), flag],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return int(done.stdout.split()[-1])


def test_a_server_process_freezes_its_start_up_heap(tmp_path: Path) -> None:
    assert _frozen(tmp_path, "on") > 10_000  # the modules, the app, the store


def test_an_app_in_someone_elses_process_leaves_the_collector_alone(tmp_path: Path) -> None:
    assert _frozen(tmp_path, "off") == 0
