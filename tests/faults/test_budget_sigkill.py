"""SIGKILL campaign for budgets: a gateway killed at any instant never overspends a budget.

A gateway answers a live call before its settlement commits, and commits
nothing between a call's reservation and its agent call; a SIGKILL anywhere
leaves reservations behind. Each trial gives a caller a mandate whose budget
holds `CALLS` calls, sends `CALLERS` concurrent callers through a real
`holon gateway serve` process (forked warm by `tests/faults/_zygote.py`) to a
real loopback agent priced at the cap, and SIGKILLs the gateway at a seeded
instant: after a seeded number of answers, or a seeded time into the
traffic. Then the reservations expire (the sweep runs at a time past their
deadline), the callers go on through the next gateway process until the
budget refuses them all, and the trial checks:

- answered calls <= the budget's calls;
- every call that reached the agent has a ledger row, and none of them is
  charged less than its cap (an expired reservation is charged in full);
- every answered call is among them;
- no row is left `reserved`, and the budget's spent = the sum of its rows'
  charges, with nothing reserved.

The next trial's traffic goes to that same next gateway process, which is
then killed in turn: every process but the last is SIGKILLed.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from records import EXPIRED_COST_SOURCE, EXPIRED_REASON, Store, new_key, open_store, utcnow
from tests._servers import free_port, serve
from tests.faults._campaign import TALLY
from tests.gateway.server._agent import manifest

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[2]
TRIALS = 20
CALLS = 10  # what each trial's budget holds, in calls at the cap
CALLERS = 6
CAP = Decimal("0.01")
AGENT = "acme/priced"
BODY = {"capability": "ticket.classify", "input": {"subject": "Refund please"}}
# Past every reservation's deadline (5 s) and grace (60 s): the sweep of a later time.
LATER = timedelta(hours=1)


# -- the agent and the gateway processes ---------------------------------------------------


def _agent(seen: list[str]) -> Starlette:
    async def call(request: Request) -> Response:
        request_id = request.headers["holon-request-id"]
        seen.append(request_id)
        await request.body()
        await asyncio.sleep(int(request_id[:2], 16) % 5 / 1000)  # 0-4 ms, by the id
        return JSONResponse({"output": {"label": "billing"}, "usage": {"input_tokens": 3}})

    return Starlette(routes=[Route("/agent", call, methods=["POST"])])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@dataclass
class Gateway:
    pid: int
    url: str
    log: Path

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    def wait_dead(self) -> None:
        deadline = time.monotonic() + 10
        while _alive(self.pid):  # reaped by the kernel (the zygote ignores SIGCHLD)
            assert time.monotonic() < deadline, f"gateway {self.pid} outlived its SIGKILL"
            time.sleep(0.001)

    async def ready(self, http: httpx.AsyncClient) -> None:
        deadline = time.monotonic() + 60
        while True:
            assert _alive(self.pid), f"gateway {self.pid} died:\n{self.log.read_text()}"
            assert time.monotonic() < deadline, f"gateway {self.pid} did not start"
            try:
                if (await http.get(self.url + "/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.01)


class Zygote:
    """Forks `holon gateway serve` processes over one store (see tests/faults/_zygote.py)."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self._logs = logs
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "tests.faults._zygote"],
            env=env,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.spawned: list[Gateway] = []
        assert self._readline() == "ready"

    def _readline(self) -> str:
        assert self._proc.stdout is not None
        return self._proc.stdout.readline().strip()

    def spawn(self) -> Gateway:
        assert self._proc.stdin is not None
        port = free_port()
        log = self._logs / f"gateway-{len(self.spawned)}.log"
        self._proc.stdin.write(f"{port} {log}\n")
        self._proc.stdin.flush()
        gateway = Gateway(int(self._readline()), f"http://127.0.0.1:{port}", log)
        self.spawned.append(gateway)
        return gateway

    def close(self) -> None:
        for gateway in self.spawned:
            if _alive(gateway.pid):
                gateway.kill()
        assert self._proc.stdin is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=30)
        assert self._proc.stdout is not None
        self._proc.stdout.close()


# -- one campaign: a store, an agent, the gateways -----------------------------------------


@dataclass
class Trial:
    index: int
    rng: random.Random
    token: str
    mandate: str
    answered: list[str] = field(default_factory=list)


@dataclass
class BudgetCampaign:
    store: Store
    zygote: Zygote
    http: httpx.AsyncClient
    seen: list[str]

    async def traffic(
        self,
        trial: Trial,
        gateway: Gateway,
        stop: asyncio.Event,
        on_answer: Callable[[], None] = lambda: None,
    ) -> None:
        """`CALLERS` callers until `stop`, the gateway's death, or the budget's refusal."""
        headers = {"Authorization": f"Bearer {trial.token}"}
        url = f"{gateway.url}/v1/agents/{AGENT}/invoke"

        async def caller() -> None:
            while not stop.is_set():
                try:
                    answer = await self.http.post(url, json=BODY, headers=headers)
                except httpx.TransportError:
                    return  # the gateway died under this call
                if answer.status_code == 402:
                    return
                assert answer.status_code == 200, answer.text
                trial.answered.append(answer.json()["request_id"])
                on_answer()

        await asyncio.gather(*(caller() for _ in range(CALLERS)))

    async def crash(self, trial: Trial, gateway: Gateway) -> bool:
        """Traffic through `gateway`, SIGKILLed at the trial's seeded instant; whether the
        kill landed while calls were still going on."""
        stop = asyncio.Event()
        # Even trials: at the seeded Nth answer; odd ones: a seeded time into the traffic.
        after = trial.rng.randint(1, CALLS - 1) if trial.index % 2 == 0 else None
        delay = trial.rng.uniform(0.0, 0.02)

        def kill() -> None:
            if not stop.is_set():
                gateway.kill()
                stop.set()

        def on_answer() -> None:
            if after is not None and len(trial.answered) >= after:
                kill()  # right there: the other callers' calls are wherever they are

        async def killer() -> None:
            await asyncio.sleep(delay)
            kill()

        task = asyncio.create_task(killer()) if after is None else None
        await self.traffic(trial, gateway, stop, on_answer)
        mid_traffic = stop.is_set()
        kill()  # the callers all stopped first (the budget ran out): kill it idle
        if task is not None:
            task.cancel()
        gateway.wait_dead()
        return mid_traffic

    async def orphans_done(self, gateway: Gateway) -> None:
        """On PostgreSQL, wait until the killed gateway's server backends have gone: a
        statement it sent just before its death still runs (and commits, in autocommit) after
        the process is reaped, so a sweep before that would miss the reservation it writes.
        A real gateway's sweep comes later (past the deadline and its grace) and sees it."""
        if self.store.dialect != "postgresql":
            return
        deadline = time.monotonic() + 30
        query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")
        while True:
            with self.store.engine.connect() as connection:
                left = connection.execute(query, {"name": f"holon {gateway.pid}"}).scalar_one()
            if not left:
                return
            assert time.monotonic() < deadline, f"{left} backends outlived gateway {gateway.pid}"
            await asyncio.sleep(0.01)

    def rows(self, trial: Trial) -> list[Any]:
        return self.store.ledger.list(mandate_id=trial.mandate, decision="allow", limit=1000).items

    async def settled(self, trial: Trial) -> list[Any]:
        """The trial's rows once the live gateway's settlements (after answers) landed."""
        deadline = time.monotonic() + 30
        while True:
            rows = self.rows(trial)
            if all(r.status != "reserved" for r in rows):
                return rows
            assert time.monotonic() < deadline, "settlements did not land"
            await asyncio.sleep(0.01)

    def check(self, trial: Trial, rows: list[Any]) -> None:
        seen = set(self.seen)
        answered = set(trial.answered)
        assert len(trial.answered) == len(answered) <= CALLS, trial.answered
        assert answered <= seen
        by_request = {r.request_id: r for r in rows}
        assert answered <= set(by_request)
        for row in rows:
            assert row.status in ("settled", "expired"), row
            if row.status == "expired":
                assert (row.cost_source, row.reason) == (EXPIRED_COST_SOURCE, EXPIRED_REASON)
            if row.request_id in seen:
                assert row.cost_usd == CAP, f"a call that reached the agent was charged {row}"
        periods = {r.period for r in rows}
        for period in periods:
            charged = sum((r.cost_usd for r in rows if r.period == period), Decimal(0))
            spent, reserved = self.store.ledger.budget(trial.mandate, period)
            assert (spent, reserved) == (charged, Decimal(0))
            assert spent <= CALLS * CAP


@pytest.fixture
def campaign_env(store_url: str, tmp_path: Path) -> Iterator[tuple[Store, dict[str, str]]]:
    key = new_key()
    store = open_store(store_url, secret_key=key, auto_upgrade=True)
    env = {
        **os.environ,
        "HOLON_DATABASE_URL": store_url,
        "HOLON_SECRET_KEY": key.decode(),
        "HOLON_HOME": str(tmp_path / "home"),
        "HOLON_EXAMPLES": "off",
        "HOLON_AGENT_NETWORKS": "127.0.0.0/8",
        "HOLON_PROBE_INTERVAL_S": "0",
        "HOLON_LOG_LEVEL": "WARNING",
    }
    try:
        yield store, env
    finally:
        store.close()


@asynccontextmanager
async def _campaign(store: Store, env: dict[str, str], logs: Path) -> AsyncIterator[BudgetCampaign]:
    seen: list[str] = []
    with serve(_agent(seen)) as agent_url, _zygote(env, logs) as zygote:
        store.agents.register(
            manifest(AGENT, agent_url, pricing={"per_call_usd": str(CAP)})  # cost = the cap
        )
        limits = httpx.Limits(max_connections=CALLERS * 2, max_keepalive_connections=CALLERS)
        async with httpx.AsyncClient(timeout=30, limits=limits) as http:
            yield BudgetCampaign(store, zygote, http, seen)


@contextmanager
def _zygote(env: dict[str, str], logs: Path) -> Iterator[Zygote]:
    zygote = Zygote(env, logs)
    try:
        yield zygote
    finally:
        zygote.close()


def _trial(store: Store, index: int) -> Trial:
    holder = f"bot-{index}"
    mandate = f"budget-{index}"
    store.mandates.grant(
        {
            "schema_version": 1,
            "id": mandate,
            "holder": holder,
            "capabilities": ["ticket.classify"],
            "max_cost_per_call_usd": str(CAP),
            "timeout_s": 5,
            "budget": {"amount_usd": str(CALLS * CAP), "period": "month"},
        }
    )
    token = store.tokens.create(f"caller:{holder}")[1]
    return Trial(index, random.Random(f"budget-sigkill-{index}"), token, mandate)


async def test_a_killed_gateway_never_overspends_a_budget(
    campaign_env: tuple[Store, dict[str, str]], tmp_path: Path
) -> None:
    store, env = campaign_env
    dialect = "PostgreSQL" if store.dialect == "postgresql" else "SQLite"
    trials = [_trial(store, i) for i in range(TRIALS)]
    async with _campaign(store, env, tmp_path) as campaign:
        current = campaign.zygote.spawn()
        # Two spares start while trials run, so a restart rarely waits for one.
        spares = [campaign.zygote.spawn(), campaign.zygote.spawn()]
        await current.ready(campaign.http)
        for index, trial in enumerate(trials):
            following = spares.pop(0)
            if index + 2 < len(trials):
                spares.append(campaign.zygote.spawn())
            mid_traffic = await campaign.crash(trial, current)
            await campaign.orphans_done(current)
            at_kill = {r.request_id: r.status for r in campaign.rows(trial)}
            unsettled = [rid for rid in trial.answered if at_kill.get(rid) == "reserved"]
            expired = store.ledger.expire(now=utcnow() + LATER)
            await following.ready(campaign.http)
            answered_before = len(trial.answered)
            await campaign.traffic(trial, following, asyncio.Event())
            rows = await campaign.settled(trial)
            campaign.check(trial, rows)
            current = following
            reached = {r.request_id for r in rows} & set(campaign.seen)
            TALLY[f"budget SIGKILL: trials ({dialect})"] += 1
            TALLY["budget SIGKILL: gateways killed"] += 1
            TALLY["budget SIGKILL: killed mid-traffic"] += mid_traffic
            TALLY["budget SIGKILL: calls answered"] += len(trial.answered)
            TALLY["budget SIGKILL: calls answered after the restart"] += (
                len(trial.answered) - answered_before
            )
            TALLY["budget SIGKILL: answered before their settlement committed"] += len(unsettled)
            TALLY["budget SIGKILL: trials with an answered, unsettled call"] += bool(unsettled)
            TALLY["budget SIGKILL: reservations expired (charged in full)"] += expired
            TALLY["budget SIGKILL: expired without reaching the agent"] += sum(
                1 for r in rows if r.status == "expired" and r.request_id not in reached
            )
            TALLY["budget SIGKILL: ledger rows checked"] += len(rows)
        # Every call that reached the agent, in any trial, has its row.
        allowed = store.ledger.list(decision="allow", limit=1000).items
        assert set(campaign.seen) <= {r.request_id for r in allowed}
        assert len(campaign.seen) == len(set(campaign.seen))
        TALLY["budget SIGKILL: agent calls"] += len(campaign.seen)
