"""No request blocks the gateway's event loop: /healthz answers during a flood of hostile numbers.

A real `holon gateway serve` process and a real agent process on 127.0.0.1.
Before the number limits, one 58-byte body (`1E+500000000`) kept the loop
busy writing half a billion digits (/healthz took 1.88 s). Now the flood
mixes the hostile bodies of the issue (caller numbers past the limits, an
agent answering `1e10000000`), the largest bodies the limits allow (8 MiB of
numbers in a request, a 2 MB echo, an output refused as too large once
written, each sent once) and ordinary calls; meanwhile /healthz is asked every 20 ms and
must answer every time, each within a generous second.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gateway.service import StoreService
from gateway.settings import Settings
from tests._servers import free_port
from tests.gateway.server._agent import manifest
from tests.gateway.server._gateway import mandate

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[3]
HEALTHZ_BOUND_S = 1.0  # generous: the loop answers in milliseconds; 1.88 s before the limits
INVOKE = "/v1/agents/acme/numbers/invoke"


def _wait_up(url: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 90  # a start-up wait, not a timing check
    while True:
        try:
            if httpx.get(url, timeout=1).status_code < 500:
                return
        except httpx.TransportError:
            pass
        assert process.poll() is None, process.communicate()[1]
        assert time.monotonic() < deadline, f"{url} did not come up"
        time.sleep(0.05)


def _process(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(gateway URL, caller token): a gateway process calling an agent process."""
    env = {
        **os.environ,
        "HOLON_HOME": str(tmp_path / "home"),
        "HOLON_EXAMPLES": "off",
        "HOLON_AGENT_NETWORKS": "any",
        "HOLON_PROBE_INTERVAL_S": "0",
    }
    env.pop("HOLON_GATEWAY_URL", None)
    agent_port, gateway_port = free_port(), free_port()
    agent_url = f"http://127.0.0.1:{agent_port}"
    client = StoreService.from_settings(Settings.from_env(env))
    try:
        client.store.agents.register(manifest("acme/numbers", agent_url))
        client.store.mandates.grant(mandate(max_cost_per_call_usd="0.01"))
        token = client.store.tokens.create("caller:finance-bot")[1]
    finally:
        client.store.close()
    agent = _process(
        ["-m", "uvicorn", "tests.gateway.server._numbers_agent:app", "--port", str(agent_port)],
        env,
    )
    gateway = _process(
        ["-m", "gateway.cli", "gateway", "serve", "--port", str(gateway_port)]
        + ["--eval-workers", "0"],
        env,
    )
    try:
        _wait_up(agent_url + "/received", agent)
        url = f"http://127.0.0.1:{gateway_port}"
        _wait_up(url + "/healthz", gateway)
        yield url, token
    finally:
        _stop(gateway)
        _stop(agent)


CAPABILITY = b'{"capability":"ticket.classify","input":'
# The hostile bodies, and an ordinary call: small, many of them.
HOSTILE = [
    ("caller 1E+2147483648", CAPABILITY + b'{"a":1E+2147483648,"b":2}}', 400),
    ("caller 1E+500000000", CAPABILITY + b'{"a":1E+500000000,"b":2}}', 400),
    ("caller 5,000-digit integer", CAPABILITY + b'{"a":' + b"9" * 5000 + b"}}", 400),
    ("agent 1e10000000", CAPABILITY + b'{"mode":"huge"}}', 502),
    ("ordinary", CAPABILITY + b'{"mode":"echo","a":1E+3999}}', 200),
]


def _largest() -> list[tuple[str, bytes, int]]:
    """The largest bodies the limits let through, each way: seconds of work for the gateway."""
    decimals = b",".join([b"1.5"] * (8 * 1024 * 1024 // 4 - 100))  # 2 million numbers
    echo = b",".join([b"2.25"] * 400_000)  # 2 MB out and back
    count = CAPABILITY + b'{"mode":"count","numbers":[' + decimals + b"]}}"
    return [
        ("caller 8 MiB of numbers", count, 200),
        ("echo of 2 MB of numbers", CAPABILITY + b'{"mode":"echo","n":[' + echo + b"]}}", 200),
        ("output too large written", CAPABILITY + b'{"mode":"wide","count":210000}}', 502),
    ]


def test_healthz_answers_during_a_flood_of_hostile_numbers(world: tuple[str, str]) -> None:
    url, token = world
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    statuses: Counter[tuple[str, int]] = Counter()
    failures: list[str] = []
    latencies: list[float] = []
    flooding = threading.Event()
    flooding.set()

    def send(bodies: list[tuple[str, bytes, int]], rounds: int) -> None:
        with httpx.Client(timeout=120) as client:
            for _ in range(rounds):
                for what, body, expected in bodies:
                    response = client.post(url + INVOKE, content=body, headers=headers)
                    statuses[what, response.status_code] += 1
                    if response.status_code != expected:
                        failures.append(f"{what}: {response.status_code} {response.text[:200]}")

    def probe() -> None:
        with httpx.Client(timeout=30) as client:
            while flooding.is_set():
                started = time.perf_counter()
                response = client.get(url + "/healthz")
                latencies.append(time.perf_counter() - started)
                if response.status_code != 200:
                    failures.append(f"/healthz: {response.status_code}")
                time.sleep(0.02)

    prober = threading.Thread(target=probe)
    prober.start()
    workers = [threading.Thread(target=send, args=(HOSTILE, 20)) for _ in range(3)]
    workers.append(threading.Thread(target=send, args=(_largest(), 1)))
    try:
        for thread in workers:
            thread.start()
        for thread in workers:
            thread.join()
    finally:
        flooding.clear()
        prober.join()
    latencies.sort()
    print(
        f"\n/healthz during the flood: {len(latencies)} answers, median "
        f"{latencies[len(latencies) // 2] * 1000:.1f} ms, slowest {latencies[-1] * 1000:.1f} ms; "
        f"calls {sum(statuses.values())}: {dict(statuses)}"
    )
    assert failures == []
    assert sum(statuses.values()) == 3 * 20 * len(HOSTILE) + len(_largest())
    assert len(latencies) >= 10
    assert latencies[-1] < HEALTHZ_BOUND_S, latencies[-5:]
