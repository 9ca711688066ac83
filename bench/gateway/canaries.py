"""What canaries cost the live path: gateways with canaries on and off, interleaved in one run.

Canaries (gateway/live/_canaries.py) touch a live call in one place: once the
agent has answered, `Canaries.nudge` draws a random number and, with
probability `HOLON_CANARY_SHARE`, queues a canary. The canary itself runs in
the gateway's background loop (store reads in threads, the agent called
through the live executor, the case graded, one run written), on the same
event loop and the same store as the live calls: that is what live calls
may feel, and what this bench measures.

One agent (bench/executor/zero_agent.py) claims `ticket.classify`, whose
suite (bench/gateway/contract.py's schemas; a holdout of 8 cases) is
installed before any gateway starts, and a real eval of the agent is run in
this process (evals `make_plan`, `start`, `work`), so the agent has a record
canaries watch (bench/gateway/run.py `prepare` sets up the agent, the
mandate with its budget and the caller's token). Then three gateway
processes (bench/gateway/serve.py, lookups at their default 1 s TTL) over
that one store:

- `on`: canaries at `--share` (default 0.02, the default setting), floor 0,
  so the comparison is of the live path plus the canaries its traffic
  triggers, and a ceiling too high to refuse any (`HOLON_CANARY_CEILING_USD`
  1000000);
- `off`: canaries off (share 0, floor 0): the baseline;
- `control`: off again, in a third process: what it "adds" over `off` is
  the noise floor of the comparison, process to process included.

The load is paced (16 callers at `--rate`, default 200 calls/s in all), the
three targets' calls interleaved in one stream per round (each block of
three in a shuffled order: bench/gateway/run.py drive_paced_mix), several
rounds, so the machine's noise falls on all. Reported: each target's
p50/p95/p99 from the send, what `on` and `control` add over `off` (p50,
p95, p99), each gateway's CPU time per live call (the canaries' own work
counted in `on`'s), and the canaries the `on` gateway sent and graded
(its `/metrics`, `holon_canaries_total`) against what the share would
give. The canaries' writes go to the store all three gateways share;
`--store-each` gives each gateway a store of its own instead (each set up
and evaluated alike), so that no gateway waits on another's writes.

Goal (reported, never asserted): <= 0.05 ms added at p50 by canaries on.

    .venv/bin/python bench/gateway/canaries.py [--json] [--rate 200] [--seconds 5]
        [--rounds 5] [--share 0.02] [--warmup 200] [--postgres ADMIN_URL] [--store-each]
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiohttp
from cryptography.fernet import Fernet

from bench._args import bench_parser
from bench._support import postgres_url, sqlite_url
from bench.gateway.contract import ANSWER, SPLITS, write_suite
from bench.gateway.run import (
    AGENT,
    BODY,
    CALLER,
    CAPABILITY,
    agent_server,
    cpu_seconds,
    drive_paced,
    drive_paced_mix,
    gateway_server,
    prepare,
    tail_ms,
)
from evals import make_plan, start, work
from evals.suites import install_suite
from records import open_store

HOLDOUT_CASES = 8
SUITE_YAML = f"""\
schema_version: 1
id: bench-canaries
version: 1
capability: {CAPABILITY}
title: The canaries bench's suite
input_schema: {{$ref: schemas/input.json}}
output_schema: {{$ref: schemas/output.json}}
limits: {{max_cost_usd: "0.01", timeout_s: 5}}
threshold: 0.5
checks:
  - {{name: label, path: $.output.label, equals: {{path: $.expected.label}}}}
public: {{file: cases/public.jsonl}}
holdout: {{file: cases/holdout.jsonl}}
"""
OFF = {"HOLON_CANARY_SHARE": "0", "HOLON_CANARY_FLOOR": "0"}
TARGETS = ("off", "on", "control")
METRIC = re.compile(r'^holon_canaries_total\{[^}]*result="([a-z_]+)"\} (\d+)$', re.MULTILINE)
# Canaries that raised (their loop counts them): none, or the figure hides lost work.
FAILED = re.compile(r'^holon_loop_failures_total\{loop="canaries"\} (\d+)$', re.MULTILINE)


def _suite(root: Path) -> Path:
    """The suite: public and holdout cases whose inputs differ from the live calls' (so a
    canary is a holdout case, as in production); the zero agent passes them all."""
    cases = {
        split: [
            {
                "id": f"{split}-{i}",
                "input": {"ticket": f"{split} ticket {i}: my order is late", "lang": "en"},
                "expected": ANSWER,
            }
            for i in range(HOLDOUT_CASES)
        ]
        for split in SPLITS
    }
    return write_suite(root, SUITE_YAML, cases)


def setup(url: str, key: str, root: Path, agent_url: str) -> dict[str, str]:
    """The bench's store (agent, mandate, caller token: `prepare`), the suite, an operator
    token, and a real eval of the agent to its end, so canaries have a record to watch."""
    home = root / "home-eval"
    tokens = prepare(url, key, home, agent_url)
    store = open_store(url, secret_key=key)
    try:
        install_suite(store, _suite(root))
        plan = make_plan(store, AGENT, home=home, concurrency=4)
        info = work(store, plan, start(store, plan), home=home)
        if info.status != "done":
            raise RuntimeError(f"the bench agent's eval ended {info.status}")
        tokens["operator"] = store.tokens.create("operator")[1]
    finally:
        store.close()
    return tokens


async def canaries_seen(session: aiohttp.ClientSession, gateway_url: str, token: str) -> Any:
    """`holon_canaries_total` of a gateway's `/metrics`, by result (passed, failed,
    skipped_REASON), and `raised`: the canaries' loop's failures."""
    headers = {"Authorization": f"Bearer {token}"}
    async with session.get(f"{gateway_url}/metrics", headers=headers) as response:
        text = await response.text()
        if response.status != 200:
            raise RuntimeError(f"/metrics answered {response.status}: {text[:300]}")
    counts: dict[str, int] = {}
    for result, n in METRIC.findall(text):
        counts[result] = counts.get(result, 0) + int(n)
    counts["raised"] = sum(int(n) for n in FAILED.findall(text))
    return counts


async def load(
    gateways: dict[str, tuple[str, int, dict[str, str]]],
    rate: float,
    seconds: float,
    rounds: int,
    warmup: int = 200,
) -> dict[str, Any]:
    """The paced rounds across the gateways (by target: URL, pid, tokens of its store)."""
    headers = {
        name: {"Content-Type": "application/json", "Authorization": f"Bearer {tokens[CALLER]}"}
        for name, (_, _, tokens) in gateways.items()
    }
    urls = [f"{gateways[name][0]}/v1/agents/{AGENT}/invoke" for name in TARGETS]
    operator = {name: tokens["operator"] for name, (_, _, tokens) in gateways.items()}
    calls = max(3 * 10, int(rate * seconds))
    latencies: dict[str, list[float]] = {name: [] for name in TARGETS}
    cpu = dict.fromkeys(TARGETS, 0.0)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        for name, url in zip(TARGETS, urls, strict=True):  # warm pools, caches, the contract
            await drive_paced(session, url, headers[name], warmup, 16, rate, BODY)
        before_run = await canaries_seen(session, gateways["on"][0], operator["on"])
        for _ in range(rounds):
            before = {name: cpu_seconds(pid) for name, (_, pid, _) in gateways.items()}
            each = await drive_paced_mix(
                session, urls, [(headers[name], BODY) for name in TARGETS], calls, 16, rate
            )
            for name, (values, _) in zip(TARGETS, each, strict=True):
                latencies[name] += values
                cpu[name] += cpu_seconds(gateways[name][1]) - before[name]
        await asyncio.sleep(1.0)  # the last canaries queued, graded
        seen = {
            name: await canaries_seen(session, gateways[name][0], operator[name])
            for name in TARGETS
        }
    return _summary(latencies, cpu, seen, before_run)


def _summary(
    latencies: dict[str, list[float]],
    cpu: dict[str, float],
    seen: dict[str, dict[str, int]],
    before_run: dict[str, int],
) -> dict[str, Any]:
    out: dict[str, Any] = {
        name: {
            **tail_ms(values),
            "gateway_cpu_ms_per_call": round(cpu[name] * 1000 / len(values), 3),
            "calls": len(values),
        }
        for name, values in latencies.items()
    }
    for name in ("on", "control"):
        out[f"{name}_added"] = {
            key: round(out[name][key] - out["off"][key], 3)
            for key in ("p50_ms", "p95_ms", "p99_ms", "gateway_cpu_ms_per_call")
        }
    on = seen["on"]
    timed = {k: n - before_run.get(k, 0) for k, n in on.items()}
    out["canaries"] = {
        # During the timed rounds (the warm-up's are left out), and in all.
        "sent": timed.get("passed", 0) + timed.get("failed", 0),
        "passed": timed.get("passed", 0),
        "skipped": {k: n for k, n in timed.items() if k.startswith("skipped_") and n},
        "raised": timed.get("raised", 0),
        "sent_in_all": on.get("passed", 0) + on.get("failed", 0),
        "off_gateways_sent": sum(sum(seen[name].values()) for name in ("off", "control")),
    }
    return out


def main() -> None:
    parser = bench_parser(__doc__, rounds=5)
    parser.add_argument("--rate", type=float, default=200.0, help="calls/s, all targets")
    parser.add_argument("--seconds", type=float, default=5.0, help="of each round's stream")
    parser.add_argument(
        "--share", type=float, default=0.02, help="HOLON_CANARY_SHARE of the `on` gateway"
    )
    parser.add_argument(
        "--warmup", type=int, default=200, help="untimed calls to each gateway first"
    )
    parser.add_argument("--postgres", metavar="ADMIN_URL", help="PostgreSQL instead of SQLite")
    parser.add_argument(
        "--store-each",
        action="store_true",
        help="a store per gateway (each set up and evaluated alike) instead of one shared:"
        " no gateway waits on another's writes (SQLite's one writer across processes)",
    )
    args = parser.parse_args()
    results: dict[str, Any] = {"share": args.share}
    on = {
        "HOLON_CANARY_SHARE": str(args.share),
        "HOLON_CANARY_FLOOR": "0",
        "HOLON_CANARY_CEILING_USD": "1000000",
    }
    settings = {"off": OFF, "on": on, "control": OFF}
    with tempfile.TemporaryDirectory(prefix="holon-bench-canaries-") as tmp:
        root = Path(tmp)
        with agent_server() as agent_url, ExitStack() as stack:
            key = Fernet.generate_key().decode()
            stores: dict[str, tuple[str, dict[str, str]]] = {}
            for name in TARGETS if args.store_each else TARGETS[:1]:
                here = root / name
                here.mkdir()
                store = postgres_url(args.postgres) if args.postgres else sqlite_url(here)
                url = stack.enter_context(store)
                stores[name] = (url, setup(url, key, here, agent_url))
            gateways = {}
            for name in TARGETS:
                url, tokens = stores.get(name, stores[TARGETS[0]])
                home = root / f"home-{name}-{secrets.token_hex(2)}"
                gateway_url, pid = stack.enter_context(
                    gateway_server(url, key, home, None, settings[name])
                )
                gateways[name] = (gateway_url, pid, tokens)
            results["paced"] = asyncio.run(
                load(gateways, args.rate, args.seconds, args.rounds, args.warmup)
            )
        results["backend"] = "postgresql" if args.postgres else "sqlite"
        results["stores"] = "a store per gateway" if args.store_each else "one store"
    paced = results["paced"]
    on_calls = paced["on"]["calls"]
    results["canaries_expected"] = round(on_calls * args.share, 1)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(
        f"paced 16@{args.rate:g}/s on {results['backend']} ({results['stores']}), "
        f"{args.rounds} rounds, "
        f"share {args.share:g}:"
    )
    for name in (*TARGETS, "on_added", "control_added", "canaries"):
        print(f"  {name:14} {paced[name]}")
    print(f"  canaries the share gives {on_calls} calls: {results['canaries_expected']}")


if __name__ == "__main__":
    main()
