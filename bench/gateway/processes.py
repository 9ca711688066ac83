"""Two gateway processes on one PostgreSQL store: one budget shared by both against a budget
each, calls/s in one run (issue 20: "no lost concurrency").

Every reservation locks its budget row. If that lock were held across
several round trips, two processes calling under one mandate would queue
on it and lose throughput against two processes calling under two. Here:
one agent (bench/executor/zero_agent.py), two gateway processes
(bench/gateway/serve.py, as in bench/gateway/run.py) over one throwaway
PostgreSQL database, and two kinds of round, alternating:

- `one budget`: both processes get calls from one caller, whose mandate's
  budget every call reserves against;
- `two budgets`: each process gets calls from a caller of its own, with a
  mandate and budget of its own.

Each round runs `--concurrency` closed-loop callers per process (so twice
that in all) for `--calls` calls per process. The ratio of the medians
(one budget / two budgets) is the concurrency the shared row costs; 1.0 is
none. Afterwards every ledger is checked exact (rows = calls, spent = sum
of rows, nothing left reserved).

    .venv/bin/python bench/gateway/processes.py [--json] [--rounds 3] [--calls 1500]
        [--concurrency 16] [--postgres ADMIN_URL]
"""

from __future__ import annotations

import asyncio
import json
import secrets
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiohttp
from cryptography.fernet import Fernet

from bench._args import bench_parser
from bench._support import postgres_url
from bench.gateway.run import (
    ADMIN_URL,
    AGENT,
    CALLER,
    KEEPALIVE_S,
    agent_server,
    check_ledger,
    cpu_seconds,
    drive,
    gateway_server,
    prepare,
)
from gateway.service import StoreService
from records import open_store

OWN = ["bench-own-1", "bench-own-2"]  # the callers (and mandates) of the two-budget rounds


def setup(url: str, key: str, home: Path, agent_url: str) -> dict[str, str]:
    """The agent, the shared mandate (bench/gateway/run.py's) and one mandate per process:
    each caller's token."""
    tokens = prepare(url, key, home, agent_url)
    store = open_store(url, secret_key=key)
    try:
        client = StoreService(store, home, 30)
        for caller in OWN:
            mandate = {
                "schema_version": 1,
                "id": caller,
                "holder": caller,
                "capabilities": ["ticket.classify"],
                "agents": ["bench/*"],
                "max_cost_per_call_usd": "0.01",
                "budget": {"amount_usd": "1000000", "period": "month"},
            }
            client.mandates.grant(mandate, source="<bench>")
            tokens[caller] = store.tokens.create(f"caller:{caller}")[1]
    finally:
        store.close()
    return tokens


def headers(token: str) -> dict[str, str]:
    return {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}


async def load(
    gateways: list[tuple[str, int]],
    tokens: dict[str, str],
    rounds: int,
    calls: int,
    concurrency: int,
) -> dict[str, Any]:
    kinds = {
        "one budget": [CALLER, CALLER],
        "two budgets": OWN,
    }
    rates: dict[str, list[float]] = {kind: [] for kind in kinds}
    cpu: dict[str, float] = dict.fromkeys(kinds, 0.0)
    made: dict[str, int] = dict.fromkeys([CALLER, *OWN], 0)
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_S)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def both(callers: list[str], n: int) -> float:
            started = time.perf_counter()
            await asyncio.gather(
                *(
                    drive(
                        session,
                        f"{url}/v1/agents/{AGENT}/invoke",
                        headers(tokens[c]),
                        n,
                        concurrency,
                    )
                    for (url, _), c in zip(gateways, callers, strict=True)
                )
            )
            for c in callers:
                made[c] += n
            return time.perf_counter() - started

        for callers in kinds.values():  # warm both processes for every caller
            await both(callers, 300)
        for _ in range(rounds):
            for kind, callers in kinds.items():
                before = sum(cpu_seconds(pid) for _, pid in gateways)
                wall = await both(callers, calls)
                cpu[kind] += sum(cpu_seconds(pid) for _, pid in gateways) - before
                rates[kind].append(2 * calls / wall)
    out: dict[str, Any] = {
        kind: {
            "calls_per_s": round(statistics.median(values), 1),
            "calls_per_s_rounds": [round(v, 1) for v in values],
            "gateway_cpu_ms_per_call": round(cpu[kind] * 1000 / (rounds * 2 * calls), 3),
        }
        for kind, values in rates.items()
    }
    out["ratio_one_to_two_budgets"] = round(
        out["one budget"]["calls_per_s"] / out["two budgets"]["calls_per_s"], 3
    )
    out["made"] = made
    return out


def main() -> None:
    parser = bench_parser(__doc__, calls=1500, calls_help="calls per process a round", rounds=3)
    parser.add_argument("--concurrency", type=int, default=16, help="callers per process")
    parser.add_argument("--postgres", metavar="ADMIN_URL", default=ADMIN_URL)
    args = parser.parse_args()
    key = Fernet.generate_key().decode()
    with tempfile.TemporaryDirectory(prefix="holon-bench-processes-") as tmp:
        root = Path(tmp)
        with agent_server() as agent_url, postgres_url(args.postgres) as url:
            home = root / f"home-{secrets.token_hex(4)}"
            tokens = setup(url, key, home, agent_url)
            with ExitStack() as stack:
                gateways = [stack.enter_context(gateway_server(url, key, home)) for _ in range(2)]
                out = asyncio.run(load(gateways, tokens, args.rounds, args.calls, args.concurrency))
            made = out.pop("made")
            out["ledgers_consistent"] = {
                caller: check_ledger(url, key, made[caller], caller, mandate)["consistent"]
                for caller, mandate in [(CALLER, "bench-live"), *((c, c) for c in OWN)]
            }
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for kind in ("one budget", "two budgets"):
        n = out[kind]
        print(
            f"{kind:<12} {n['calls_per_s']:>7.0f} calls/s (rounds {n['calls_per_s_rounds']}), "
            f"gateway CPU {n['gateway_cpu_ms_per_call']:.2f} ms/call"
        )
    print(f"one budget / two budgets: {out['ratio_one_to_two_budgets']}")
    print(f"ledgers consistent: {out['ledgers_consistent']}")


if __name__ == "__main__":
    main()
