"""The front doors' added latency over POST /v1/capabilities/{cap}/invoke, in one run.

The same live call through four doors of one gateway, interleaved round by
round so the machine's noise falls on all four:

- `invoke`: POST /v1/capabilities/ticket.classify/invoke (the baseline);
- `mcp`: POST /mcp, a `tools/call` of the tool ticket.classify (the JSON-RPC
  request an MCP client sends over Streamable HTTP, after its handshake);
- `a2a`: POST /v1/capabilities/ticket.classify/a2a, a blocking `SendMessage`
  with one DataPart (A2A 1.0), answered with a completed Task, which the
  door writes to the store (`a2a_tasks`) before it answers;
- `openai`: POST /v1/chat/completions, `model` the capability and the input
  as the JSON text of one user message (what the `openai` SDK sends),
  answered with a chat completion whose content is the output as JSON text.

Processes, agent, mandate and token as bench/gateway/run.py sets them up
(the zero-latency agent, a budgeted mandate, one uvicorn worker, SQLite).
The load client is aiohttp with keep-alive connections, closed loop, at
concurrency 1 and 8; each door's p50 and p95 are reported with their ratio
to `invoke`'s and the milliseconds they add. Every answer is checked (an
MCP `isError` or an A2A task not completed fails the run), and so is the
ledger afterwards: one settled row per call, whatever door it came through.

    .venv/bin/python bench/doors/run.py [--json] [--calls 400] [--rounds 3] [--postgres]
        [--doors invoke,mcp,a2a,openai]

`--postgres` puts the gateway on a throwaway PostgreSQL database (created,
dropped; ADMIN_URL of bench/gateway/run.py) instead of a SQLite file.
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiohttp
from cryptography.fernet import Fernet

from bench._args import bench_parser
from bench._support import by_load, closed_loop, latency_rows, postgres_url, sqlite_url
from bench.gateway.run import (
    ADMIN_URL,
    CALLER,
    CAPABILITY,
    INPUT,
    agent_server,
    check_ledger,
    gateway_server,
    prepare,
)

BODIES = {
    "invoke": (
        f"/v1/capabilities/{CAPABILITY}/invoke",
        {"input": INPUT},
    ),
    "mcp": (
        "/mcp",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": CAPABILITY, "arguments": INPUT},
        },
    ),
    "a2a": (
        f"/v1/capabilities/{CAPABILITY}/a2a",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"data": INPUT}]}
            },
        },
    ),
    "openai": (
        "/v1/chat/completions",
        {"model": CAPABILITY, "messages": [{"role": "user", "content": json.dumps(INPUT)}]},
    ),
}


def _ok(door: str, status: int, payload: bytes) -> bool:
    if status != 200:
        return False
    body = json.loads(payload)
    if door == "mcp":
        return body.get("result", {}).get("isError") is False
    if door == "a2a":
        state = body.get("result", {}).get("task", {}).get("status", {}).get("state")
        return bool(state == "TASK_STATE_COMPLETED")
    if door == "openai":
        choice = body.get("choices", [{}])[0]
        return choice.get("finish_reason") == "stop" and "content" in choice.get("message", {})
    return "output" in body


async def drive(
    session: aiohttp.ClientSession, url: str, door: str, calls: int, concurrency: int
) -> list[float]:
    path, body = BODIES[door]
    data = json.dumps(body).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

    def refusal(status: int, payload: bytes) -> str | None:
        return None if _ok(door, status, payload) else f"{door}: {status}: {payload[:300]!r}"

    latencies, _ = await closed_loop(
        session, url + path, data, headers, calls, concurrency, refusal
    )
    return latencies


async def measure(
    url: str, token: str, calls: int, rounds: int, doors: list[str]
) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {token}"}
    connector = aiohttp.TCPConnector(limit=32, keepalive_timeout=2.0)
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession(headers=auth, connector=connector) as session:
        for door in doors:  # warm up: caches, connections, the first task write
            await drive(session, url, door, 30, 1)
        for concurrency in (1, 8):
            samples: dict[str, list[float]] = {door: [] for door in doors}
            for _ in range(rounds):
                for door in doors:
                    samples[door] += await drive(session, url, door, calls, concurrency)
            out[f"c{concurrency}"] = latency_rows(samples, "invoke")
    return out


def main() -> int:
    parser = bench_parser(__doc__, calls=400, calls_help="calls per door per round", rounds=3)
    parser.add_argument("--postgres", action="store_true", help="the store on PostgreSQL")
    parser.add_argument(
        "--doors",
        default=",".join(BODIES),
        help="the doors to measure, comma-separated (invoke, the baseline, always runs)",
    )
    args = parser.parse_args()
    doors = ["invoke", *(d for d in args.doors.split(",") if d != "invoke")]
    unknown = [d for d in doors if d not in BODIES]
    if unknown:
        parser.error(f"unknown doors: {', '.join(unknown)} (known: {', '.join(BODIES)})")
    key = Fernet.generate_key().decode()
    with (
        tempfile.TemporaryDirectory() as tmp,
        agent_server() as agent_url,
        postgres_url(ADMIN_URL) if args.postgres else sqlite_url(Path(tmp)) as url,
    ):
        home = Path(tmp) / "home"
        token = prepare(url, key, home, agent_url)[CALLER]
        with gateway_server(url, key, home) as (gateway, _pid):
            results = asyncio.run(measure(gateway, token, args.calls, args.rounds, doors))
        total = 30 * len(doors) + sum(
            row["calls"] for level in results.values() for row in level.values()
        )
        results["ledger"] = check_ledger(url, key, total)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0 if results["ledger"]["consistent"] else 1
    print("door     conc  p50 ms  p95 ms  p50 x   p95 x   +p50 ms  +p95 ms")
    for concurrency, door, row in by_load(results):
        print(
            f"{door:8} {concurrency:>4}  {row['p50_ms']:6.2f}  {row['p95_ms']:6.2f}  "
            f"{row['p50_ratio']:5.2f}   {row['p95_ratio']:5.2f}   "
            f"{row['p50_added_ms']:7.2f}  {row['p95_added_ms']:7.2f}"
        )
    print("ledger:", json.dumps(results["ledger"]))
    return 0 if results["ledger"]["consistent"] else 1


if __name__ == "__main__":
    sys.exit(main())
