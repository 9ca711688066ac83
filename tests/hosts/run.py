"""holon over several hosts: the multi-host run, as a test (test_hosts.py) or on its own.

    sudo .venv/bin/python -m tests.hosts.run        # prints the figures; exit 1 if a check fails

Hosts are network namespaces on one bridge (tests/hosts/_netns.py): `pg`
(a fresh PostgreSQL cluster), `lb` (HAProxy), `gw1`-`gw3` (`holon gateway
serve --eval-workers 0`), `wk1`, `wk2` (`holon worker`) and `agent` (the
example ticket agent over HTTP). The run:

1. `holon db upgrade` from a gateway host; suite, agent, mandates and tokens
   written on the store; every service started.
2. Throughput: the same calls to one gateway host directly, then through the
   balancer to all three.
3. The live run: an eval started through the balancer (worked by the worker
   hosts only) while four callers call through the balancer under their
   mandates (a budget, a burst-only rate limit, a steady rate limit, none).
   Mid-run `gw1` and `wk1` are killed (link cut, every process SIGKILLed);
   then `gw2` and `gw3` are restarted one at a time (drained at the
   balancer, SIGTERM, started, ready), then `wk2` (SIGINT, started).
4. The checks (`check`): every 5xx came from a killed host; ledger rows are
   the calls answered plus some of those lost with the killed gateway, and
   every answer has its row; the budget paid for exactly what it holds and no
   more; the burst-only limit allowed exactly its burst and the steady one no
   more than its bucket refilled; the eval finished with every cell recorded
   exactly once, by both worker hosts.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from agents import load_manifest
from evals.suites import install_suite
from records import Store, new_key, open_store
from records._rate import EPOCH, UNITS_PER_TOKEN, RateLimit
from tests.hosts import _netns, _services
from tests.hosts._netns import Host, Network, wait_for
from tests.hosts._services import ROOT, Balancer, Postgres, holon, holon_env

AGENT = "acme/ticket-triage"
CAP_USD = Decimal("0.002")  # the agent's price and every mandate's cap: a call costs its cap
BUDGET_CALLS = 200
BURST = 300
STEADY = 10  # calls a second, and its burst
BENCH_CALLS = 600  # per gateway host in the throughput phases
MIN_CALLS = 2400  # the live run's calls at least
CALLERS: dict[str, tuple[dict[str, Any], int]] = {  # caller -> (limits, lanes)
    "budgeted": ({"budget": {"amount_usd": str(CAP_USD * BUDGET_CALLS), "period": "month"}}, 4),
    "bursty": ({"rate_limit": {"calls": 1, "per": "hour", "burst": BURST}}, 4),
    "steady": ({"rate_limit": {"calls": STEADY, "per": "second", "burst": STEADY}}, 6),
    "open": ({}, 8),
    "bench": ({}, 0),
}
EVAL_PACE_S = 0.2
AUDIT = [
    "CREATE TABLE hosts_audit (eval_id TEXT, idx INTEGER, recorded_by TEXT)",
    "CREATE FUNCTION hosts_audit_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "INSERT INTO hosts_audit VALUES (NEW.eval_id, NEW.idx, NEW.recorded_by); "
    "RETURN NULL; END $$",
    "CREATE TRIGGER hosts_audit_done AFTER UPDATE OF status, finished_at ON eval_cells "
    "FOR EACH ROW WHEN (NEW.status = 'done') EXECUTE FUNCTION hosts_audit_row()",
]


def missing() -> str | None:
    """Why the run cannot happen on this machine (None: it can)."""
    return _netns.missing() or _services.missing()


@dataclass(frozen=True)
class Call:
    caller: str
    status: int  # 0: no HTTP answer, or one cut short
    backend: str  # the gateway HAProxy sent it to ("" when called directly or unanswered)
    request_id: str | None
    code: str | None  # the error body's code; with status 0, the transport error's class
    answered_at: float = 0.0  # time.monotonic() when it came back


@dataclass
class Figures:
    lines: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.lines.append(line)
        print(line, flush=True)


@dataclass
class Deployment:
    net: Network
    store: Store
    env: Callable[[Host], dict[str, str]]  # a host's holon environment
    tokens: dict[str, str]
    balancer: Balancer
    started_at: datetime  # the live run's start, on the store's clock
    killed_at: float  # time.monotonic() when gw1 and wk1 went
    gateways: dict[str, subprocess.Popen[str]]  # host name -> its gateway process
    workers: dict[str, subprocess.Popen[str]]  # host name -> its worker process

    def host(self, name: str) -> Host:
        return self.net.hosts[name]


def _ticket() -> dict[str, Any]:
    schema = json.loads((ROOT / "schema/capabilities/ticket.classify.input.json").read_text())
    example: dict[str, Any] = schema["examples"][0]
    return example


BODY = {"capability": "ticket.classify", "input": _ticket()}


async def _one(client: httpx.AsyncClient, url: str, caller: str, token: str) -> Call:
    backend = ""
    try:
        async with client.stream(
            "POST",
            f"{url}/v1/agents/{AGENT}/invoke",
            json=BODY,
            headers={"Authorization": f"Bearer {token}"},
        ) as answer:
            # Read before the body: HAProxy names the gateway in the headers, so a body
            # cut short (a gateway killed mid-answer, its link gone) is still its call.
            backend = answer.headers.get("x-holon-backend", "")
            await answer.aread()
    except httpx.TransportError as exc:
        return Call(caller, 0, backend, None, type(exc).__name__, time.monotonic())
    body = (
        answer.json()
        if answer.headers.get("content-type", "").startswith("application/json")
        else {}
    )
    error = body.get("error") if isinstance(body, dict) else None
    return Call(
        caller,
        answer.status_code,
        backend,
        body.get("request_id") if answer.status_code == 200 else None,
        error.get("code") if isinstance(error, dict) else None,
        time.monotonic(),
    )


def _client() -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    return httpx.AsyncClient(timeout=60, limits=limits)


def bench(url: str, token: str, calls: int, concurrency: int) -> tuple[list[Call], float]:
    """`calls` calls at `url`, `concurrency` at a time: (the calls, seconds taken)."""

    async def go() -> tuple[list[Call], float]:
        async with _client() as client:
            queue = iter(range(calls))
            done: list[Call] = []

            async def lane() -> None:
                for _ in queue:
                    done.append(await _one(client, url, "bench", token))

            started = time.perf_counter()
            await asyncio.gather(*(lane() for _ in range(concurrency)))
            return done, time.perf_counter() - started

    return asyncio.run(go())


class Traffic:
    """The callers, in a thread of their own, until `stop`."""

    def __init__(self, url: str, tokens: dict[str, str]) -> None:
        self.calls: list[Call] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._run(url, tokens),))
        self._thread.start()

    async def _run(self, url: str, tokens: dict[str, str]) -> None:
        async with _client() as client:

            async def lane(caller: str) -> None:
                while not self._stop.is_set():
                    self.calls.append(await _one(client, url, caller, tokens[caller]))

            lanes = [lane(c) for c, (_, n) in CALLERS.items() for _ in range(n)]
            await asyncio.gather(*lanes)

    def stop(self) -> list[Call]:
        self._stop.set()
        self._thread.join(timeout=120)
        assert not self._thread.is_alive(), "the callers did not stop"
        return self.calls


def _setup_store(store: Store, agent_url: str) -> dict[str, str]:
    with store.engine.begin() as conn:
        for statement in AUDIT:
            conn.execute(text(statement))
    install_suite(store, ROOT / "examples/suites/ticket-classify", activate=True)
    manifest = load_manifest(ROOT / "examples/agents/acme-ticket-triage.yaml").to_json()
    manifest |= {
        "protocol": "holon-http",
        "endpoint": agent_url,
        "pricing": {"per_call_usd": str(CAP_USD)},
    }
    store.agents.register(manifest)
    tokens = {"operator": store.tokens.create("operator")[1]}
    for caller, (limits, _) in CALLERS.items():
        store.mandates.grant(
            {
                "schema_version": 1,
                "id": f"{caller}-m",
                "holder": caller,
                "capabilities": ["ticket.classify"],
                "max_cost_per_call_usd": str(CAP_USD),
                **limits,
            }
        )
        tokens[caller] = store.tokens.create(f"caller:{caller}")[1]
    return tokens


@contextmanager
def deployment(workdir: Path) -> Iterator[Deployment]:
    """Every host up and serving; everything removed afterwards."""
    net = Network(workdir)
    postgres: Postgres | None = None
    store: Store | None = None
    try:
        pg = net.add("pg", 10)
        lb = net.add("lb", 5)
        gateways = [net.add(f"gw{i}", 20 + i) for i in (1, 2, 3)]
        workers = [net.add(f"wk{i}", 30 + i) for i in (1, 2)]
        agent = net.add("agent", 40)
        postgres = Postgres(net, pg)
        admin_engine = create_engine(postgres.url, isolation_level="AUTOCOMMIT")
        with admin_engine.connect() as conn:
            conn.execute(text("CREATE DATABASE holon"))
        admin_engine.dispose()
        store_url = postgres.url.rsplit("/", 1)[0] + "/holon"
        key = new_key().decode()
        public_url = f"http://{lb.address}:{_services.BALANCER_PORT}"

        def env(host: Host) -> dict[str, str]:
            return holon_env(store_url, key, net, workdir / "home" / host.name, public_url)

        # The schema, as an operator makes it: `holon db upgrade` once, from one host.
        upgrade = net.spawn(
            gateways[0], holon("db", "upgrade"), env=env(gateways[0]), what="db-upgrade", cwd=ROOT
        )
        assert upgrade.wait(timeout=120) == 0, gateways[0].log("db-upgrade").read_text()
        store = open_store(store_url, secret_key=key)
        agent_url = _services.start_agent(net, agent)
        tokens = _setup_store(store, agent_url)
        gateway_procs = {g.name: _services.start_gateway(net, g, env(g)) for g in gateways}
        for g in gateways:
            _services.gateway_ready(g, gateway_procs[g.name])
        balancer = Balancer(net, lb, gateways)
        worker_procs = {w.name: _services.start_worker(net, w, env(w)) for w in workers}
        yield Deployment(
            net,
            store,
            env,
            tokens,
            balancer,
            EPOCH,
            math.inf,
            gateway_procs,
            worker_procs,
        )
    finally:
        if store is not None:
            store.close()
        net.close()
        if postgres is not None:
            postgres.close()


def _per_s(calls: int, seconds: float) -> str:
    return f"{calls / seconds:.0f} calls/s"


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process `pid` has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def throughput(d: Deployment, figures: Figures) -> None:
    """One gateway host directly, then three through the balancer, the same calls to each
    host: calls a second, and each gateway's CPU per call (what decides how far hosts
    scale when each has cores of its own, as they do not on a shared test machine)."""
    token = d.tokens["bench"]
    one = d.host("gw2")
    cpu = {name: _cpu_s(proc.pid) for name, proc in d.gateways.items()}
    direct, took_one = bench(
        f"http://{one.address}:{_services.GATEWAY_PORT}", token, BENCH_CALLS, 16
    )
    assert Counter(c.status for c in direct) == {200: BENCH_CALLS}
    cpu_one = (_cpu_s(d.gateways["gw2"].pid) - cpu["gw2"]) / BENCH_CALLS
    cpu = {name: _cpu_s(proc.pid) for name, proc in d.gateways.items()}
    spread, took_three = bench(d.balancer.url, token, 3 * BENCH_CALLS, 48)
    assert Counter(c.status for c in spread) == {200: 3 * BENCH_CALLS}
    by_host = Counter(c.backend for c in spread)
    cpu_three = {
        name: (_cpu_s(proc.pid) - cpu[name]) / by_host[name] for name, proc in d.gateways.items()
    }
    figures.add(
        f"throughput: one gateway host {_per_s(BENCH_CALLS, took_one)} "
        f"({cpu_one * 1000:.1f} ms CPU a call); three behind HAProxy "
        f"{_per_s(3 * BENCH_CALLS, took_three)} in all, "
        f"{_per_s(3 * BENCH_CALLS, took_three * 3)} a host ("
        + ", ".join(
            f"{h} {by_host[h]} calls, {cpu_three[h] * 1000:.1f} ms CPU a call" for h in sorted(cpu)
        )
        + f"); load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )


def _recorded_by(d: Deployment, eval_id: str) -> Counter[str]:
    with d.store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT recorded_by FROM hosts_audit WHERE eval_id = :e"), {"e": eval_id}
        )
        return Counter(str(r[0]).split(":", 1)[0] for r in rows)


def restart_gateway(d: Deployment, name: str) -> None:
    host = d.host(name)
    d.balancer.drain(name)
    old = d.gateways[name]
    old.send_signal(signal.SIGTERM)
    # uvicorn shuts down gracefully, then re-raises the signal it caught.
    code = old.wait(timeout=60)
    assert code in (0, -signal.SIGTERM), (code, host.log("gateway").read_text()[-3000:])
    d.gateways[name] = _services.start_gateway(d.net, host, d.env(host))
    _services.gateway_ready(host, d.gateways[name])
    d.balancer.ready(name)


def restart_worker(d: Deployment, name: str) -> None:
    host = d.host(name)
    old = d.workers[name]
    old.send_signal(signal.SIGINT)  # Ctrl-C: cells in flight recorded, the rest given back
    code = old.wait(timeout=90)
    log = host.log("worker").read_text()
    assert code == 130 and "Traceback" not in log, (code, log[-3000:])
    d.workers[name] = _services.start_worker(d.net, host, d.env(host))


def live_run(d: Deployment, figures: Figures) -> tuple[str, list[Call], float]:
    operator = {"Authorization": f"Bearer {d.tokens['operator']}"}
    started = httpx.post(
        f"{d.balancer.url}/v1/evals",
        json={"agent": AGENT, "concurrency": 4, "pace_s": EVAL_PACE_S},
        headers=operator,
        timeout=60,
    )
    assert started.status_code == 201, started.text
    eval_id: str = started.json()["eval"]["id"]
    t0 = time.monotonic()
    with d.store.engine.connect() as conn:  # the rate buckets' clock: the store's
        d.started_at = conn.execute(text("SELECT statement_timestamp()")).scalar_one()
    traffic = Traffic(d.balancer.url, d.tokens)
    try:
        # Kill mid-run: once the worker host has recorded cells and traffic is flowing.
        wait_for(
            lambda: _recorded_by(d, eval_id)["wk1"] >= 2 and len(traffic.calls) > 300,
            "wk1 to record cells under traffic",
            90,
        )
        d.killed_at = time.monotonic()
        killed = d.net.kill(d.host("gw1")) + d.net.kill(d.host("wk1"))
        figures.add(
            f"kills: 2 hosts (gw1, wk1) at {time.monotonic() - t0:.1f} s, "
            f"{len(traffic.calls)} calls in: links cut, {killed} processes SIGKILLed"
        )
        time.sleep(3)
        for name in ("gw2", "gw3"):
            restart_gateway(d, name)
        restart_worker(d, "wk2")
        figures.add(f"rolling restart: gw2, gw3, wk2 done at {time.monotonic() - t0:.1f} s")
        time.sleep(3)

        def enough() -> bool:
            seen = Counter((c.caller, c.status) for c in list(traffic.calls))
            over_limits = all(
                seen[(caller, status)] > 0
                for caller, status in [("budgeted", 402), ("bursty", 429), ("steady", 429)]
            )
            return over_limits and sum(seen.values()) >= MIN_CALLS

        wait_for(enough, f"{MIN_CALLS} calls, past the budget and the limits", 180)
    finally:
        calls = traffic.stop()
    took = time.monotonic() - t0
    hosts = Counter(c.backend for c in calls)
    figures.add(
        f"calls: {len(calls)} in {took:.1f} s through the balancer ({_per_s(len(calls), took)}; "
        f"{', '.join(f'{h} {n}' for h, n in sorted(hosts.items()))})"
    )
    return eval_id, calls, t0


def check(d: Deployment, eval_id: str, calls: list[Call], t0: float, figures: Figures) -> None:
    store = d.store
    # No 5xx (nor a call left unanswered or cut short) from a host that was up.
    # gw1 was up until `killed_at`: a 5xx it answered before then counts against it. A
    # call in flight to it then ends after HAProxy's `timeout server`: a 504, or, when
    # gw1's headers had come through, its answer cut short (status 0, backend gw1).
    bad = [
        c
        for c in calls
        if (c.status >= 500 or c.status == 0)
        and (c.backend != "gw1" or c.answered_at < d.killed_at)
    ]
    assert not bad, f"5xx or no answer from a host that was up: {Counter(bad)}"
    lost = [c for c in calls if c.status >= 500 or c.status == 0]
    figures.add(
        f"5xx: {len(lost)}, all from the killed gw1 "
        f"({dict(Counter(c.status for c in lost))}); 0 from hosts that were up"
    )
    statuses = Counter((c.caller, c.status) for c in calls)
    # A gateway answers before its settlement commits (gateway.live._calls): a call gw1
    # answered in its last moment may have died with its settlement, its reservation left
    # to expire and be charged in full. Only those may stay reserved.
    last_moment = {
        c.request_id
        for c in calls
        if c.backend == "gw1" and c.status == 200 and c.answered_at > d.killed_at - 1.0
    }

    must_settle = {c.request_id for c in calls if c.status == 200} - last_moment

    # Settlements commit after their answers: wait for those of the hosts that were up.
    def settled() -> bool:
        with store.engine.connect() as conn:
            reserved = conn.execute(
                text("SELECT request_id FROM ledger WHERE status = 'reserved'")
            ).scalars()
            return must_settle.isdisjoint(reserved)

    wait_for(settled, "the settlements of answered calls", 60)
    with store.engine.connect() as conn:
        rows = conn.execute(
            text("SELECT caller, request_id, decision, reason, status, created_at FROM ledger")
        ).all()
        budgets = conn.execute(
            text("SELECT spent_usd, reserved_usd FROM budgets WHERE mandate_id = 'budgeted-m'")
        ).all()
    by_caller = Counter(r.caller for r in rows)
    allowed = Counter(r.caller for r in rows if r.decision == "allow")
    ids = {r.request_id: r for r in rows}
    for caller in CALLERS:
        made = [c for c in calls if c.caller == caller]
        if caller == "bench":
            continue
        answered = [c for c in made if 0 < c.status < 500]
        gone = len(made) - len(answered)
        assert len(answered) <= by_caller[caller] <= len(made), (caller, by_caller[caller])
        for c in answered:
            if c.status == 200:
                assert c.request_id in ids, c
                status = ids[c.request_id].status
                assert status == "settled" or (
                    status == "reserved" and c.request_id in last_moment
                ), (status, c)
        figures.add(
            f"ledger {caller}: {len(made)} calls, {by_caller[caller]} rows = {len(answered)} "
            f"answered + {by_caller[caller] - len(answered)} of the {gone} lost with gw1; "
            f"{statuses[(caller, 200)]} 200, {statuses[(caller, 402)]} 402, "
            f"{statuses[(caller, 429)]} 429; {allowed[caller]} allowed"
        )
    died_with_gw1 = sum(1 for r in last_moment if r in ids and ids[r].status == "reserved")
    figures.add(
        f"answered by gw1 in its last second: {len(last_moment)}, of which {died_with_gw1} "
        "settlement(s) died with it (the reservation expires, charged at the cap)"
    )
    bench_rows = by_caller["bench"]
    assert bench_rows == 4 * BENCH_CALLS, bench_rows
    oks = [c.request_id for c in calls if c.status == 200]
    assert len(oks) == len(set(oks)), "a request id answered twice"
    # The budget: exactly what it holds, never more.
    ((spent, reserved),) = budgets
    budget = CAP_USD * BUDGET_CALLS
    assert Decimal(spent) + Decimal(reserved) <= budget
    assert allowed["budgeted"] == BUDGET_CALLS and statuses[("budgeted", 402)] > 0
    assert statuses[("budgeted", 200)] <= BUDGET_CALLS
    figures.add(
        f"budget: ${budget} = {BUDGET_CALLS} calls at the cap; {allowed['budgeted']} "
        f"reserved, {statuses[('budgeted', 200)]} answered; spent ${Decimal(spent)} + "
        f"held ${Decimal(reserved)} <= ${budget}"
    )
    # The rate limits: the burst exactly; the steady bucket no more than it held and
    # refilled, in its own units and on its own clock (the store's), with no slack: it was
    # made at the first call (full), after `started_at`, and last refilled at `updated_at`.
    assert allowed["bursty"] == BURST and statuses[("bursty", 429)] > 0, allowed["bursty"]
    limit = RateLimit(STEADY, "second", STEADY)
    with store.engine.connect() as conn:
        level, updated_at = conn.execute(
            text("SELECT level, updated_at FROM rate_buckets WHERE mandate_id = 'steady-m'")
        ).one()
    elapsed_us = (updated_at - d.started_at) // timedelta(microseconds=1)
    taken = allowed["steady"] * UNITS_PER_TOKEN + level
    assert taken <= limit.capacity + elapsed_us * limit.units_per_us, (allowed["steady"], level)
    bound = math.floor(STEADY + STEADY * elapsed_us / 1_000_000)
    figures.add(
        f"rate limits: burst-only {allowed['bursty']} allowed of burst {BURST}; steady "
        f"{allowed['steady']} allowed in {elapsed_us / 1e6:.1f} s of its bucket, at most "
        f"{bound} ({STEADY} + {STEADY}/s)"
    )
    # The eval: done, every cell recorded exactly once, by both worker hosts.
    wait_for(lambda: store.evals.get(eval_id).status != "running", "the eval to finish", 240)
    info = store.evals.get(eval_id)
    assert info.status == "done", info.status
    cells = store.evals.cells(eval_id)
    with store.engine.connect() as conn:
        recordings = Counter(
            int(r[0])
            for r in conn.execute(
                text("SELECT idx FROM hosts_audit WHERE eval_id = :e"), {"e": eval_id}
            )
        )
    assert sorted(recordings) == sorted(c.idx for c in cells) == list(range(info.cells_total))
    assert set(recordings.values()) == {1}, "a cell recorded more than once"
    hosts = _recorded_by(d, eval_id)
    assert set(hosts) == {"wk1", "wk2"}, hosts
    figures.add(
        f"eval: {info.cells_total} cells, each recorded once "
        f"({', '.join(f'{h} {n}' for h, n in sorted(hosts.items()))}); {info.status} "
        f"{time.monotonic() - t0:.0f} s after its start"
    )


def run(workdir: Path) -> Figures:
    figures = Figures()
    with deployment(workdir) as d:
        throughput(d, figures)
        eval_id, calls, t0 = live_run(d, figures)
        check(d, eval_id, calls, t0, figures)
    return figures


def main() -> int:
    why = missing()
    if why:
        print(f"cannot run: {why}", file=sys.stderr)
        return 3
    with tempfile.TemporaryDirectory(prefix="holon-hosts.") as workdir:
        try:
            run(Path(workdir))
        except AssertionError as exc:
            print(f"FAILED: {exc}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
