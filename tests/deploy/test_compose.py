"""deploy/compose.yaml as an operator runs it: PostgreSQL, the migration, two gateways and
two workers from the images deploy/build makes (podman-compose; the example agent and a
published PostgreSQL port added by compose.test.yaml). An eval started through one
gateway is worked by both workers and read through the other; live calls through both
gateways have their ledger rows; a worker and a gateway stop cleanly on SIGTERM."""

from __future__ import annotations

import functools
import json
import os
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from agents import load_manifest
from evals.suites import install_suite
from records import Store, open_store
from tests.deploy._containers import (
    ROOT,
    free_port,
    podman,
    require_images,
    secret_key,
    wait_for,
)

pytestmark = [pytest.mark.slow]

AGENT = "acme/ticket-triage"
CAP_USD = Decimal("0.002")
CALLS = 40  # through each gateway


class Stack:
    def __init__(self, project: str, env: dict[str, str]) -> None:
        self.project = project
        self.env = env
        self.gateways = {
            "gateway-1": f"http://127.0.0.1:{env['HOLON_GATEWAY_1_PORT']}",
            "gateway-2": f"http://127.0.0.1:{env['HOLON_GATEWAY_2_PORT']}",
        }
        self.store_url = (
            f"postgresql+psycopg://holon:{env['POSTGRES_PASSWORD']}"
            f"@127.0.0.1:{env['HOLON_TEST_PG_PORT']}/holon"
        )

    def compose(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        files = [
            "-f",
            str(ROOT / "deploy/compose.yaml"),
            "-f",
            str(Path(__file__).parent / "compose.test.yaml"),
        ]
        return subprocess.run(
            [sys.executable, "-m", "podman_compose", "-p", self.project, *files, *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    def logs(self, service: str) -> str:
        found = podman("logs", self.container(service), check=False)
        return found.stdout + found.stderr

    def working(self, service: str) -> bool:
        """Whether a worker's process works evals: it runs, and `migrate` upgraded the
        schema more than a look of `--wait-for-store` (a second) ago, so a worker that
        waited for the upgrade has opened the store."""
        migrate = self._state("migrate", "{{.State.Running}} {{.State.ExitCode}}")
        upgraded = self._state("migrate", "{{.State.FinishedAt.UnixNano}}")
        running = self._state(service, "{{.State.Running}}")
        if migrate != "false 0" or not upgraded.isdigit() or running != "true":
            return False
        return time.time_ns() - int(upgraded) > 2 * 10**9

    def _state(self, service: str, template: str) -> str:
        found = podman("inspect", "--format", template, self.container(service), check=False)
        return found.stdout.strip() if found.returncode == 0 else ""

    def waited(self, condition: Callable[[], bool], what: str, service: str) -> None:
        """`wait_for` (240 s), failing with the service's container state and its log's
        end: what CI's report keeps of a stack that did not come up."""
        try:
            wait_for(condition, what, 240)
        except AssertionError as exc:
            state = self._state(
                service, "{{.State.Status}} exit {{.State.ExitCode}} restarts {{.RestartCount}}"
            )
            raise AssertionError(
                f"{exc}\n{service}: {state}\n{self.logs(service)[-1500:]}"
            ) from None

    def ready(self, name: str) -> bool:
        try:
            return httpx.get(f"{self.gateways[name]}/readyz", timeout=2).status_code == 200
        except httpx.TransportError:
            return False


@pytest.fixture
def stack() -> Iterator[Stack]:
    require_images()
    env = {
        **os.environ,
        "POSTGRES_PASSWORD": secrets.token_urlsafe(16),
        "HOLON_SECRET_KEY": secret_key(),
        "HOLON_GATEWAY_1_PORT": str(free_port()),
        "HOLON_GATEWAY_2_PORT": str(free_port()),
        "HOLON_TEST_PG_PORT": str(free_port()),
        "HOLON_TEST_ROOT": str(ROOT),
        # podman's networks are private /24s of 10.0.0.0/8: the agent is on this one.
        "HOLON_AGENT_NETWORKS": "10.0.0.0/8",
    }
    up = Stack(f"holontest{os.getpid()}", env)
    started = up.compose("up", "-d")
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        yield up
    finally:
        for service in ("migrate", "gateway-1", "gateway-2", "worker-1", "worker-2"):
            print(f"--- {service}\n{up.logs(service)[-2000:]}")
        up.compose("down", "-v", "-t", "10")


def _setup(store: Store) -> dict[str, str]:
    install_suite(store, ROOT / "examples/suites/ticket-classify", activate=True)
    manifest = load_manifest(ROOT / "examples/agents/acme-ticket-triage.yaml").to_json()
    manifest |= {
        "protocol": "holon-http",
        "endpoint": "http://agent:8102/",
        "pricing": {"per_call_usd": str(CAP_USD)},
    }
    store.agents.register(manifest)
    store.mandates.grant(
        {
            "schema_version": 1,
            "id": "caller-m",
            "holder": "caller",
            "capabilities": ["ticket.classify"],
            "max_cost_per_call_usd": str(CAP_USD),
        }
    )
    return {
        "operator": store.tokens.create("operator")[1],
        "caller": store.tokens.create("caller:caller")[1],
    }


def _ticket() -> dict[str, Any]:
    schema = json.loads((ROOT / "schema/capabilities/ticket.classify.input.json").read_text())
    example: dict[str, Any] = schema["examples"][0]
    return example


@pytest.mark.timeout(900)
def test_compose_stack_serves_evaluates_and_stops_cleanly(stack: Stack) -> None:
    # The gateways come up once `migrate` has upgraded the schema (until then they
    # wait for it: --wait-for-store).
    for name in stack.gateways:
        stack.waited(functools.partial(stack.ready, name), f"{name} to be ready", name)
    # Both workers must be at work before the eval starts, or one may take every cell.
    for worker in ("worker-1", "worker-2"):
        stack.waited(functools.partial(stack.working, worker), f"{worker} to start", worker)
    store = open_store(stack.store_url, secret_key=stack.env["HOLON_SECRET_KEY"])
    try:
        tokens = _setup(store)
        operator = {"Authorization": f"Bearer {tokens['operator']}"}
        caller = {"Authorization": f"Bearer {tokens['caller']}"}

        # An eval started through gateway-1 (which runs no eval workers), worked by the
        # two worker containers, read through gateway-2.
        started = httpx.post(
            f"{stack.gateways['gateway-1']}/v1/evals",
            json={"agent": AGENT, "concurrency": 4, "pace_s": 0.1},
            headers=operator,
            timeout=60,
        )
        assert started.status_code == 201, started.text
        eval_id = started.json()["eval"]["id"]

        def finished() -> bool:
            got = httpx.get(
                f"{stack.gateways['gateway-2']}/v1/evals/{eval_id}", headers=operator, timeout=10
            )
            assert got.status_code == 200, got.text
            status: str = got.json()["status"]
            assert status in ("running", "done"), got.text
            return status == "done"

        wait_for(finished, "the eval to finish", 300)
        with store.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT status, recorded_by FROM eval_cells WHERE eval_id = :e"),
                {"e": eval_id},
            ).all()
        assert rows and all(status == "done" for status, _ in rows)
        by = {str(who).split(":", 1)[0] for _, who in rows}
        assert len(by) == 2, f"cells recorded by {by}: both worker containers should work it"
        record = httpx.get(
            f"{stack.gateways['gateway-2']}/v1/records/{AGENT}", headers=operator, timeout=10
        )
        assert record.status_code == 200, record.text
        assert record.json()["eval_id"] == eval_id

        # Live calls through both gateways: every one answered, each with its ledger row.
        body = {"capability": "ticket.classify", "input": _ticket()}
        answered = 0
        with httpx.Client(timeout=60) as client:
            for url in stack.gateways.values():
                for _ in range(CALLS):
                    got = client.post(f"{url}/v1/agents/{AGENT}/invoke", json=body, headers=caller)
                    assert got.status_code == 200, got.text
                    answered += 1
        with store.engine.connect() as conn:
            ledger = conn.execute(
                text("SELECT count(*) FROM ledger WHERE caller = 'caller'")
            ).scalar_one()
        assert ledger == answered == 2 * CALLS
    finally:
        store.close()

    # SIGTERM (podman stop): a worker exits 143, a gateway 0; neither leaves a traceback.
    for service, code in (("worker-1", 143), ("gateway-1", 0)):
        podman("stop", "-t", "60", stack.container(service))
        state = json.loads(podman("inspect", stack.container(service)).stdout)[0]["State"]
        assert state["ExitCode"] == code, (service, state, stack.logs(service)[-2000:])
    for service in ("gateway-1", "gateway-2", "worker-1", "worker-2"):
        assert "Traceback" not in stack.logs(service), stack.logs(service)[-3000:]
    # The other gateway still answers.
    assert stack.ready("gateway-2")
