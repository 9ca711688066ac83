"""deploy/systemd's units under a real systemd: the holon-systemd image (holon, systemd as
PID 1, the units installed and enabled as docs/deploy.md says) run with podman. The units
start at boot under their hardening (ProtectSystem=strict: the embedded store is written
in /var/lib/holon), serve, come back after a crash, and stop cleanly on systemd's
SIGTERM: the gateway exits 0, the worker 143, which the unit counts as success."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.deploy._containers import free_port, podman, require_images, wait_for

pytestmark = [pytest.mark.slow]

ENV_FILE = """\
HOLON_HOME=/var/lib/holon
HOLON_EXAMPLES=off
HOLON_AGENT_NETWORKS=public
HOLON_LISTEN_HOST=0.0.0.0
"""


class Machine:
    def __init__(self, name: str, port: int) -> None:
        self.name = name
        self.url = f"http://127.0.0.1:{port}"

    def run(self, *argv: str, check: bool = True) -> str:
        done = podman("exec", self.name, *argv, check=check)
        return done.stdout

    def show(self, unit: str, *props: str) -> dict[str, str]:
        out = self.run("systemctl", "show", unit, "-p", ",".join(props))
        return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)

    def ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False


@pytest.fixture
def machine(tmp_path: Path) -> Iterator[Machine]:
    require_images()
    env = tmp_path / "env"
    env.write_text(ENV_FILE)
    env.chmod(0o600)
    port = free_port()
    name = f"holon-systemd-test-{port}"
    podman(
        "run", "-d", "--name", name, "--systemd=always",
        "-p", f"127.0.0.1:{port}:8000",
        "-v", f"{env}:/etc/holon/env:ro",
        "localhost/holon-systemd:latest",
    )  # fmt: skip
    up = Machine(name, port)
    try:
        yield up
    finally:
        journal = podman("exec", name, "journalctl", "--no-pager", "-n", "80", check=False)
        print(journal.stdout[-4000:])
        podman("rm", "-f", "-t", "5", name, check=False)


@pytest.mark.timeout(600)
def test_units_start_serve_restart_and_stop_cleanly(machine: Machine) -> None:
    def booted() -> bool:
        state = podman("exec", machine.name, "systemctl", "is-system-running", check=False)
        return state.stdout.strip() in ("running", "degraded")

    wait_for(booted, "systemd to finish booting", 120)
    wait_for(machine.ready, "holon-gateway.service to be ready", 120)
    # The worker started beside the gateway that creates the embedded store: it waited
    # for the store (--wait-for-store), not failed and been restarted.
    assert machine.run("systemctl", "is-active", "holon-worker@1.service").strip() == "active"
    assert machine.show("holon-worker@1.service", "NRestarts")["NRestarts"] == "0"
    # The unit's hardening leaves the store's directory writable, and only it.
    files = machine.run("ls", "-l", "/var/lib/holon")
    assert "holon.db" in files and " holon holon " in files, files

    # A crash (SIGKILL) is restarted by Restart=on-failure.
    pid = machine.show("holon-gateway.service", "MainPID")["MainPID"]
    machine.run("systemctl", "kill", "-s", "KILL", "holon-gateway.service")
    wait_for(
        lambda: machine.show("holon-gateway.service", "NRestarts")["NRestarts"] == "1",
        "systemd to restart the gateway",
        60,
    )
    wait_for(machine.ready, "the restarted gateway to be ready", 120)
    assert machine.show("holon-gateway.service", "MainPID")["MainPID"] != pid

    # systemctl stop sends SIGTERM: both stop cleanly, as the units declare.
    for unit, code in (("holon-worker@1.service", "143"), ("holon-gateway.service", "0")):
        machine.run("systemctl", "stop", unit)
        shown = machine.show(unit, "ActiveState", "Result", "ExecMainStatus")
        assert shown == {"ActiveState": "inactive", "Result": "success", "ExecMainStatus": code}, (
            unit,
            shown,
        )
    journal = machine.run("journalctl", "--no-pager", "-u", "holon-gateway", "-u", "holon-worker@1")
    assert "Traceback" not in journal, journal[-3000:]
    assert not machine.ready()
    status = json.loads(
        machine.run(
            "runuser",
            "-u",
            "holon",
            "--",
            "/opt/holon/bin/holon",
            "doctor",
            "--json",
            "--home",
            "/var/lib/holon",
            check=False,
        )  # fmt: skip
    )
    assert status["ok"], status
