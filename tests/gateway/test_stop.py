"""SIGTERM, as a service manager or a rolling restart sends it, loses nothing.

A gateway stops accepting, answers and settles the calls in flight, then exits 0;
a worker records the cells in flight, gives the rest back at once (no lease to wait
out), then exits 143.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from examples.agents import ticket_triage
from records import LedgerStatus, open_store
from tests._servers import serve, start_gateway, wait_healthy
from tests.gateway._cli import CLI, TRIAGE, add_triage
from tests.gateway.server._gateway import mandate

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
IN_FLIGHT = 8


class Slow:
    """The ticket agent, answering each call after `delay_s`, counting the calls it has."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.received = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            self.received += 1
            await asyncio.sleep(self.delay_s)
        await ticket_triage.app(scope, receive, send)


@pytest.fixture
def slow_agent() -> Iterator[tuple[Slow, str]]:
    app = Slow(2.0)
    with serve(app) as url:
        yield app, url + "/"


def _register(cli: CLI, tmp_path: Path, endpoint: str) -> None:
    manifest = yaml.safe_load(TRIAGE.read_text())
    manifest.update(protocol="holon-http", endpoint=endpoint)
    path = tmp_path / "slow.yaml"
    path.write_text(yaml.safe_dump(manifest))
    assert cli("agents", "register", str(path)).code == 0


def test_a_gateway_stopped_with_calls_in_flight_answers_and_settles_them(
    tmp_path: Path, slow_agent: tuple[Slow, str]
) -> None:
    agent, endpoint = slow_agent
    home = tmp_path / "home"
    cli = CLI(home, HOLON_AGENT_NETWORKS="any")
    _register(cli, tmp_path, endpoint)
    document = tmp_path / "mandate.yaml"
    document.write_text(yaml.safe_dump(mandate()))
    assert cli("mandates", "grant", str(document)).code == 0
    token = cli("tokens", "create", "--role", "caller:finance-bot", "--json").json()["token"]
    env = {**os.environ, **cli.env, "HOLON_PROBE_INTERVAL_S": "0"}
    server, url = start_gateway(env)
    answers: list[int] = []
    try:
        wait_healthy(server, url)
        body = {"input": {"subject": "Refund please", "body": "charged twice"}}

        def call() -> None:
            answer = httpx.post(
                url + "/v1/capabilities/ticket.classify/invoke",
                json=body,
                headers={"Authorization": f"Bearer {token}"},
                timeout=60,
            )
            answers.append(answer.status_code)

        threads = [threading.Thread(target=call) for _ in range(IN_FLIGHT)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while agent.received < IN_FLIGHT:
            assert time.monotonic() < deadline, f"{agent.received} calls reached the agent"
            time.sleep(0.01)
        server.send_signal(signal.SIGTERM)
        for thread in threads:
            thread.join(timeout=60)
        code = server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
        _, stderr = server.communicate(timeout=30)
    assert answers == [200] * IN_FLIGHT, (answers, stderr[-2000:])
    assert code == 0, stderr[-2000:]  # uvicorn's own graceful stop
    assert "Traceback" not in stderr
    store = open_store(f"sqlite:///{home / 'holon.db'}")
    try:
        rows = store.ledger.list(limit=100).items
    finally:
        store.close()
    assert len(rows) == IN_FLIGHT
    assert {row.status for row in rows} == {LedgerStatus.SETTLED}


def test_a_worker_stopped_gives_its_cells_back_at_once(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cli = CLI(home)
    add_triage(cli, tmp_path, cases=10)
    started = cli("eval", "acme/ticket-triage", "--yes", "--json", "--pace", "0.5")
    # Not worked here: `holon eval` runs its own cells; start it through a worker instead.
    assert started.code in (0, 1)
    store = open_store(
        f"sqlite:///{home / 'holon.db'}", secret_key=(home / "secret.key").read_text().strip()
    )
    try:
        from evals import make_plan, start

        plan = make_plan(store, "acme/ticket-triage", home=home, concurrency=2, pace_s=0.5)
        eval_id = start(store, plan).id
        worker = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "worker", "--poll", "0.1"],
            cwd=ROOT,
            env={**os.environ, **cli.env},
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 60
            while store.evals.counts(eval_id)["done"] < 2:
                assert worker.poll() is None and time.monotonic() < deadline
                time.sleep(0.05)
            worker.send_signal(signal.SIGTERM)
            code = worker.wait(timeout=60)
        finally:
            if worker.poll() is None:
                worker.kill()
            _, stderr = worker.communicate(timeout=30)
        assert code == 128 + signal.SIGTERM and "terminated" in stderr, stderr[-2000:]
        assert "Traceback" not in stderr
        counts = store.evals.counts(eval_id)
        assert counts["running"] == 0 and counts["pending"] > 0, counts  # given back
    finally:
        store.close()
    resumed = cli("evals", "resume", eval_id, "--json")
    assert resumed.json()["status"] == "done"
