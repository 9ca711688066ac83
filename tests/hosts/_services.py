"""The services of the multi-host run, each on its host: PostgreSQL, HAProxy, holon.

- PostgreSQL: a fresh cluster of Debian's binaries (`/usr/lib/postgresql/N/bin`),
  run as the `postgres` user in its own host, trust auth for the hosts' /24 only;
- HAProxy (Debian's `haproxy`): round robin over the gateways, `/readyz` as the
  health check, connection failures retried on another gateway (a request is
  never sent twice), every answer marked with the gateway that gave it
  (`X-Holon-Backend`, HAProxy's own 5xx included), its runtime API on a Unix
  socket for draining a gateway before it restarts;
- holon: `holon gateway serve` and `holon worker` processes, and an example agent.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from tests.hosts._netns import Host, Network, wait_for

ROOT = Path(__file__).resolve().parents[2]
GATEWAY_PORT = 8000
BALANCER_PORT = 8080
AGENT_PORT = 8102
PG_PORT = 5432


def postgres_bin() -> Path | None:
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return found[-1].parent if found else None


def missing() -> str | None:
    """Why the services cannot run here (None: they can)."""
    if postgres_bin() is None:
        return "Debian's PostgreSQL server binaries are not installed (/usr/lib/postgresql)"
    if shutil.which("haproxy") is None:
        return "HAProxy is not installed"
    return None


class Postgres:
    """A throw-away cluster on `host`, removed on `close`."""

    def __init__(self, net: Network, host: Host) -> None:
        bin_dir = postgres_bin()
        assert bin_dir is not None
        self.dir = Path(tempfile.mkdtemp(prefix="holon-hosts-pg."))
        shutil.chown(self.dir, "postgres", "postgres")
        data = self.dir / "data"
        subprocess.run(
            ["runuser", "-u", "postgres", "--", str(bin_dir / "initdb")]
            + ["-D", str(data), "-A", "trust", "-U", "postgres"],
            check=True,
            capture_output=True,
        )
        with (data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {net.subnet} trust\n")
        net.spawn(
            host,
            [str(bin_dir / "postgres"), "-D", str(data), "-k", str(self.dir)]
            + ["-c", f"listen_addresses={host.address}", "-p", str(PG_PORT)]
            + ["-c", "fsync=off", "-c", "max_connections=200"],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
            what="postgres",
            user="postgres",
        )
        self.url = f"postgresql+psycopg://postgres@{host.address}:{PG_PORT}/postgres"
        wait_for(lambda: _accepts(self.url), "PostgreSQL to accept connections", 60)

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def _accepts(url: str) -> bool:
    """A query runs (a server that listens may still be starting up)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return True
    except OperationalError:
        return False
    finally:
        engine.dispose()


def _answers(address: str, port: int) -> bool:
    try:
        with socket.create_connection((address, port), timeout=1):
            return True
    except OSError:
        return False


HAPROXY_CONFIG = """\
global
    maxconn 4096
    stats socket {socket} mode 600 level admin

defaults
    mode http
    timeout connect 1s
    timeout check 1s
    timeout client 60s
    timeout server 10s
    retries 3
    option redispatch 1

frontend api
    bind {address}:{port}
    default_backend gateways
    http-after-response set-header X-Holon-Backend %s

backend gateways
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server check inter 500ms fall 2 rise 2
{servers}
"""


class Balancer:
    """HAProxy on `host`, in front of `gateways`."""

    def __init__(self, net: Network, host: Host, gateways: list[Host]) -> None:
        self.socket = net.logs / "haproxy.sock"
        servers = "\n".join(f"    server {g.name} {g.address}:{GATEWAY_PORT}" for g in gateways)
        config = net.logs / "haproxy.cfg"
        config.write_text(
            HAPROXY_CONFIG.format(
                socket=self.socket, address=host.address, port=BALANCER_PORT, servers=servers
            )
        )
        net.spawn(host, ["haproxy", "-db", "-f", str(config)], env=dict(os.environ), what="haproxy")
        self.url = f"http://{host.address}:{BALANCER_PORT}"
        wait_for(
            lambda: self.socket.exists() and self.up() == {g.name for g in gateways},
            "HAProxy to see every gateway up",
            60,
        )

    def command(self, line: str) -> str:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(str(self.socket))
            sock.sendall(line.encode() + b"\n")
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks).decode()

    def stats(self) -> dict[str, dict[str, str]]:
        """The gateways' rows of `show stat`, by server name."""
        lines = self.command("show stat").splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:] if line]
        return {
            r["svname"]: r
            for r in rows
            if r.get("pxname") == "gateways" and r["svname"] not in ("BACKEND", "FRONTEND")
        }

    def up(self) -> set[str]:
        try:
            return {name for name, row in self.stats().items() if row["status"] == "UP"}
        except OSError:
            return set()

    def drain(self, name: str) -> None:
        """No new requests to `name`; returns once its requests in flight are answered."""
        self.command(f"set server gateways/{name} state drain")
        wait_for(lambda: self.stats()[name]["scur"] == "0", f"{name} to drain", 60)

    def ready(self, name: str) -> None:
        self.command(f"set server gateways/{name} state ready")
        wait_for(lambda: name in self.up(), f"HAProxy to see {name} up", 60)


def holon_env(
    store_url: str, key: str, net: Network, home: Path, public_url: str
) -> dict[str, str]:
    """What every holon process of the deployment shares (and its own HOLON_HOME)."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        **os.environ,
        "HOLON_DATABASE_URL": store_url,
        "HOLON_SECRET_KEY": key,
        "HOLON_HOME": str(home),
        "HOLON_AGENT_NETWORKS": net.subnet,
        "HOLON_PUBLIC_URL": public_url,
        "HOLON_EXAMPLES": "off",
        "HOLON_PROBE_INTERVAL_S": "0",
        "HOLON_CANARY_SHARE": "0",
        "HOLON_CANARY_FLOOR": "0",
        "HOLON_LOG_LEVEL": "WARNING",
    }


def holon(*argv: str) -> list[str]:
    return [sys.executable, "-m", "gateway.cli", *argv]


def start_gateway(net: Network, host: Host, env: dict[str, str]) -> subprocess.Popen[str]:
    return net.spawn(
        host,
        holon("gateway", "serve", "--host", host.address, "--port", str(GATEWAY_PORT))
        + ["--eval-workers", "0"],
        env=env,
        what="gateway",
        cwd=ROOT,
    )


def gateway_ready(host: Host, proc: subprocess.Popen[str]) -> None:
    def ready() -> bool:
        assert proc.poll() is None, host.log("gateway").read_text()[-3000:]
        try:
            url = f"http://{host.address}:{GATEWAY_PORT}/readyz"
            return httpx.get(url, timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    wait_for(ready, f"the gateway on {host.name} to be ready", 120)


def start_worker(net: Network, host: Host, env: dict[str, str]) -> subprocess.Popen[str]:
    return net.spawn(host, holon("worker", "--poll", "0.2"), env=env, what="worker", cwd=ROOT)


def start_agent(net: Network, host: Host) -> str:
    """The example ticket agent over HTTP on `host`; its endpoint URL."""
    net.spawn(
        host,
        [sys.executable, "-m", "examples.agents.ticket_triage"]
        + ["--host", host.address, "--port", str(AGENT_PORT), "--log-level", "warning"],
        env=dict(os.environ),
        what="agent",
        cwd=ROOT,
    )
    wait_for(lambda: _answers(host.address, AGENT_PORT), "the agent to listen", 60)
    return f"http://{host.address}:{AGENT_PORT}/"
