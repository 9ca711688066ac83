"""A rate limit holds exactly across gateway processes sharing one store (docs/gateway.md, "Rate
limits"): real `holon gateway serve` processes, 200 concurrent calls, a burst of 10 and a
refill too slow to matter -> exactly 10 answered, 190 `429` with Retry-After, 200 ledger
rows; on one SQLite file and on PostgreSQL, and under `--workers 2`. A budget holds as
exactly under `--workers 2` on PostgreSQL."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from sqlalchemy import Table, insert

from records import LedgerEntry, Store, new_key, open_store
from records._models import RateBucketRow
from records._rate import EPOCH
from tests._servers import free_port, serve
from tests.gateway.server._agent import Recording, manifest, recording_agent

pytestmark = [pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
CALLS = 200
BURST = 10
AGENT = "acme/limited"
BUCKETS = cast(Table, RateBucketRow.__table__)
BODY = {"capability": "ticket.classify", "input": {"subject": "Refund please"}}


@contextmanager
def _gateway(
    env: dict[str, str], log: Path, *extra: str, started: int = 1
) -> Iterator[tuple[str, int]]:
    """`holon gateway serve` in a process of its own (its own workers with --workers),
    once `started` of its server processes have said so (uvicorn, at INFO) and it answers."""
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "gateway.cli", "gateway", "serve", "--port", str(port)]
            + ["--eval-workers", "0", *extra],
            env={**env, "HOLON_LOG_LEVEL": "INFO"},
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its workers go with it
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, f"the gateway died:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"the gateway did not start:\n{log.read_text()}"
            ready = log.read_text().count("Application startup complete") >= started
            try:
                if ready and httpx.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        yield url, proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


def _workers(pid: int) -> list[int]:
    """uvicorn's worker processes under `pid` (multiprocessing children; Linux /proc),
    not multiprocessing's resource tracker."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                command = (entry / "cmdline").read_bytes()
            except OSError:  # gone meanwhile
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            if parent == pid and b"spawn_main" in command:
                found.append(int(entry.name))
    return found


async def _fire(urls: list[str], token: str) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {token}"}
    limits = httpx.Limits(max_connections=CALLS, max_keepalive_connections=CALLS)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:
        start = asyncio.Event()

        async def one(index: int) -> httpx.Response:
            await start.wait()
            url = f"{urls[index % len(urls)]}/v1/agents/{AGENT}/invoke"
            return await client.post(url, json=BODY, headers=headers)

        tasks = [asyncio.create_task(one(i)) for i in range(CALLS)]
        await asyncio.sleep(0)
        start.set()
        return list(await asyncio.gather(*tasks))


@dataclass(frozen=True)
class _Shared:
    """One store, the environment of the gateway processes sharing it, and the recording
    agent they call; `stack` holds what the test starts (the gateways)."""

    store: Store
    env: dict[str, str]
    agent: Recording
    agent_url: str
    stack: ExitStack


@contextmanager
def _shared(url: str, home: Path, **agent: Any) -> Iterator[_Shared]:
    """The store at `url` with the recording agent registered (`agent`: its manifest's
    other fields), and the environment `holon gateway serve` over it runs in."""
    key = new_key()
    store = open_store(url, secret_key=key, auto_upgrade=True)
    env = {
        **os.environ,
        "HOLON_DATABASE_URL": url,
        "HOLON_SECRET_KEY": key.decode(),
        "HOLON_HOME": str(home),
        "HOLON_EXAMPLES": "off",
        "HOLON_AGENT_NETWORKS": "127.0.0.0/8",
        "HOLON_PROBE_INTERVAL_S": "0",
        "HOLON_LOG_LEVEL": "WARNING",
    }
    recording = Recording()
    try:
        with ExitStack() as stack:
            agent_url = stack.enter_context(serve(recording_agent(AGENT, "1.0.0", recording)))
            store.agents.register(manifest(AGENT, agent_url, **agent))
            yield _Shared(store, env, recording, agent_url, stack)
    finally:
        store.close()


def _settled(store: Store, mandate_id: str) -> list[LedgerEntry]:
    """The mandate's ledger rows once none is still reserved: settlements commit after
    their answers (30 s at the most)."""
    deadline = time.monotonic() + 30
    while True:
        rows = store.ledger.list(mandate_id=mandate_id, limit=1000).items
        if all(r.status != "reserved" for r in rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.05)


def _warm(store: Store, urls: list[str]) -> None:
    """Each process has the agent in its lookup cache, and the bucket row exists, so the
    200 calls race on the row's lock from their first one (none waits on a cache miss in a
    thread, or on the INSERT of the row, which would serialise the first group)."""
    store.mandates.grant(
        {
            "schema_version": 1,
            "id": "warm",
            "holder": "warm",
            "capabilities": ["ticket.classify"],
            "max_cost_per_call_usd": "0.01",
        }
    )
    token = store.tokens.create("caller:warm")[1]
    for url in urls:
        for _ in range(3):
            answer = httpx.post(
                f"{url}/v1/agents/{AGENT}/invoke",
                json=BODY,
                headers={"Authorization": f"Bearer {token}"},
                timeout=30,
            )
            assert answer.status_code == 200, answer.text
    with store.engine.begin() as conn:  # as the first reservation makes it: empty at the epoch
        conn.execute(insert(BUCKETS).values(mandate_id="limited", level=0, updated_at=EPOCH))


def _exactly_the_burst(store: Store, urls: list[str], token: str, agent: Recording) -> None:
    _warm(store, urls)
    warm_calls = len(agent.calls)
    responses = asyncio.run(_fire(urls, token))
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: BURST, 429: CALLS - BURST}, statuses
    for response in responses:
        if response.status_code != 429:
            continue
        error = response.json()["error"]
        assert error["code"] == "rate_limited"
        assert error["details"]["rate_limit"] == {"calls": 1, "per": "hour", "burst": BURST}
        retry = int(response.headers["Retry-After"])
        assert retry == error["details"]["retry_after_s"] and 1 <= retry <= 3600
    assert len(agent.calls) - warm_calls == BURST  # the agent saw the ten, and nothing else
    rows = _settled(store, "limited")
    assert len(rows) == CALLS
    assert Counter((r.decision, r.reason, r.status) for r in rows) == {
        ("allow", None, "settled"): BURST,
        ("deny", "rate_limited", "denied"): CALLS - BURST,
    }
    answered = {r.json()["request_id"] for r in responses if r.status_code == 200}
    assert answered == {r.request_id for r in rows if r.decision == "allow"}


def _limited(store: Store) -> str:
    """A caller's token under a mandate that lets BURST calls through, then refills too
    slowly to matter."""
    store.mandates.grant(
        {
            "schema_version": 1,
            "id": "limited",
            "holder": "bot",
            "capabilities": ["ticket.classify"],
            "max_cost_per_call_usd": "0.01",
            "rate_limit": {"calls": 1, "per": "hour", "burst": BURST},
        }
    )
    return store.tokens.create("caller:bot")[1]


def test_two_gateway_processes_hold_one_limit_exactly(store_url: str, tmp_path: Path) -> None:
    with _shared(store_url, tmp_path / "home") as shared:
        token = _limited(shared.store)
        urls = [
            shared.stack.enter_context(_gateway(shared.env, tmp_path / f"gateway-{i}.log"))[0]
            for i in range(2)
        ]
        _exactly_the_burst(shared.store, urls, token, shared.agent)


@pytest.mark.postgres
def test_serve_with_two_workers_holds_the_limit_exactly(postgres_url: str, tmp_path: Path) -> None:
    with _shared(postgres_url, tmp_path / "home") as shared:
        token = _limited(shared.store)
        url, pid = shared.stack.enter_context(
            _gateway(shared.env, tmp_path / "gateway.log", "--workers", "2", started=2)
        )
        assert len(_workers(pid)) == 2
        _exactly_the_burst(shared.store, [url], token, shared.agent)


@pytest.mark.postgres
def test_serve_with_two_workers_holds_a_budget_exactly(postgres_url: str, tmp_path: Path) -> None:
    """The budget's row is the lock (one statement on PostgreSQL): two worker processes,
    200 concurrent calls, a budget of ten calls at the cap -> exactly ten answered."""
    # Priced at the cap: each answered call spends what it reserved.
    with _shared(postgres_url, tmp_path / "home", pricing={"per_call_usd": "0.01"}) as shared:
        store = shared.store
        store.mandates.grant(
            {
                "schema_version": 1,
                "id": "budgeted",
                "holder": "bot",
                "capabilities": ["ticket.classify"],
                "max_cost_per_call_usd": "0.01",
                "budget": {"amount_usd": "0.10", "period": "month"},
            }
        )
        token = store.tokens.create("caller:bot")[1]
        url, pid = shared.stack.enter_context(
            _gateway(shared.env, tmp_path / "gateway.log", "--workers", "2", started=2)
        )
        assert len(_workers(pid)) == 2
        _warm(store, [url])
        warm_calls = len(shared.agent.calls)
        responses = asyncio.run(_fire([url], token))
        statuses = Counter(r.status_code for r in responses)
        assert statuses == {200: 10, 402: CALLS - 10}, statuses
        assert {r.json()["error"]["code"] for r in responses if r.status_code == 402} == {
            "budget_exhausted"
        }
        assert len(shared.agent.calls) - warm_calls == 10
        rows = _settled(store, "budgeted")
        assert Counter((r.decision, r.status) for r in rows) == {
            ("allow", "settled"): 10,
            ("deny", "denied"): CALLS - 10,
        }
        (period,) = {r.period for r in rows if r.decision == "allow"}
        spent = sum((r.cost_usd for r in rows), Decimal(0))
        assert spent == Decimal("0.10")
        assert store.ledger.budget("budgeted", period or "") == (spent, Decimal(0))
