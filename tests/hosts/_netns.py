"""Hosts as Linux network namespaces on one bridge: the multi-host test's topology.

Each host is a network namespace with one veth into a bridge of the root
namespace, an address of its own on a private /24, and its own UTS namespace
(its processes see their host's name, so a worker's lease owner names its
host, as on separate machines). The root namespace holds the bridge's address
and is where the test (the callers and the operator) runs. Processes are
started in a host with `ip netns exec NS unshare --uts`; a host is *killed* by
cutting its link (so nothing it had in flight is answered, not even with a
reset: a machine that lost power) and SIGKILLing every process in its
namespace. Needs root, `ip` (iproute2) and `unshare` (util-linux).
"""

from __future__ import annotations

import ipaddress
import os
import pwd
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], check=check, capture_output=True, text=True)


def missing() -> str | None:
    """Why this machine cannot build the topology, or None when it can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no `postgres` user to run PostgreSQL as (Debian's postgresql package makes one)"
    for tool in ("ip", "unshare", "runuser"):
        if shutil.which(tool) is None:
            return f"`{tool}` is not installed"
    probe = f"holonprobe{os.getpid()}"
    made = _ip("netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"cannot create a network namespace: {made.stderr.strip()}"
    _ip("netns", "del", probe, check=False)
    return None


def _free_prefix() -> str:
    """A /24 of 10.200.0.0/13 that no route of this machine touches, picked from the process
    id (so parallel runs start apart)."""
    routes = _ip("-4", "route", "show", "table", "all").stdout
    taken = {ipaddress.ip_network(word, strict=False) for word in _route_targets(routes)}
    for step in range(50 * 250):
        n = (os.getpid() + step) % (50 * 250)
        candidate = ipaddress.ip_network(f"10.{200 + n // 250}.{n % 250}.0/24")
        if not any(candidate.overlaps(t) for t in taken):
            return str(candidate.network_address).rsplit(".", 1)[0]
    raise RuntimeError("no free /24 in 10.200.0.0/13 for the hosts")


def _route_targets(routes: str) -> list[str]:
    """Every address or network a route line names (gateways and sources too)."""
    found = []
    for word in routes.split():
        try:
            network = ipaddress.ip_network(word, strict=False)
        except ValueError:
            continue
        if network.prefixlen > 0 and not network.is_loopback:
            found.append(word)
    return found


@dataclass
class Host:
    name: str  # its host name, and its part of the interface names: "gw1"
    namespace: str
    address: str
    link: str  # the veth end in the root namespace (cut to isolate the host)
    logs: Path
    procs: list[subprocess.Popen[str]] = field(default_factory=list)
    killed: bool = False

    def log(self, what: str) -> Path:
        return self.logs / f"{self.name}-{what}.log"

    def pids(self) -> list[int]:
        listed = _ip("netns", "pids", self.namespace, check=False).stdout.split()
        return [int(pid) for pid in listed]


class Network:
    """A bridge and the hosts on it; `close` removes every trace."""

    def __init__(self, logs: Path) -> None:
        tag = f"hh{os.getpid() % 100000}"
        self.tag = tag
        self.bridge = f"{tag}br"
        self.prefix = _free_prefix()
        self.subnet = f"{self.prefix}.0/24"
        self.gateway_address = f"{self.prefix}.1"
        self.logs = logs
        self.hosts: dict[str, Host] = {}
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.gateway_address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")

    def add(self, name: str, octet: int) -> Host:
        namespace = f"{self.tag}-{name}"
        link, peer = f"{self.tag}{name}", f"{self.tag}{name}p"
        address = f"{self.prefix}.{octet}"
        _ip("netns", "add", namespace)
        _ip("link", "add", link, "type", "veth", "peer", "name", peer)
        _ip("link", "set", peer, "netns", namespace)
        _ip("link", "set", link, "master", self.bridge)
        _ip("link", "set", link, "up")
        inside = ["netns", "exec", namespace, "ip"]
        subprocess.run(["ip", *inside, "link", "set", "lo", "up"], check=True)
        subprocess.run(["ip", *inside, "link", "set", peer, "name", "eth0"], check=True)
        subprocess.run(["ip", *inside, "addr", "add", f"{address}/24", "dev", "eth0"], check=True)
        subprocess.run(["ip", *inside, "link", "set", "eth0", "up"], check=True)
        host = Host(name, namespace, address, link, self.logs)
        self.hosts[name] = host
        return host

    def spawn(
        self,
        host: Host,
        argv: Sequence[str],
        *,
        env: dict[str, str],
        what: str,
        cwd: Path | None = None,
        user: str | None = None,
        stdout: int | IO[str] | None = None,
    ) -> subprocess.Popen[str]:
        """Start `argv` on `host` (its namespace, its host name), output to its log."""
        command = [
            "ip",
            "netns",
            "exec",
            host.namespace,
            "unshare",
            "--uts",
            "--",
            "sh",
            "-c",
            'hostname "$0" && exec "$@"',
            host.name,
        ]
        if user is not None:
            command += ["runuser", "-u", user, "--"]
        with host.log(what).open("a") as log:
            proc = subprocess.Popen(
                [*command, *argv],
                env=env,
                cwd=cwd,
                stdout=log if stdout is None else stdout,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        host.procs.append(proc)
        return proc

    def kill(self, host: Host) -> int:
        """Cut `host`'s link, then SIGKILL every process in its namespace; how many."""
        _ip("link", "set", host.link, "down")
        host.killed = True
        return _kill_all(host)

    def close(self) -> None:
        for host in self.hosts.values():
            _kill_all(host)
            # Deleting one end of a veth deletes both, at once (a namespace's own
            # teardown is the kernel's, later).
            _ip("link", "del", host.link, check=False)
            _ip("netns", "del", host.namespace, check=False)
        _ip("link", "del", self.bridge, check=False)


def _kill_all(host: Host) -> int:
    """SIGKILL every process in `host`'s namespace and reap the ones started here; how many
    were killed."""
    killed = 0
    for pid in host.pids():
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except ProcessLookupError:
            pass
    for proc in host.procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    return killed


def wait_for(predicate: Callable[[], object], what: str, timeout_s: float = 90) -> None:
    """Poll `predicate()` until true; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)
