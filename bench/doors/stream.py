"""Time to first byte of a streamed answer through holon, against the agent's own.

One agent that thinks `--delay-ms` (200) before it answers whole
(bench/doors/slow_agent.py), one gateway process (SQLite, or `--postgres`),
and one caller, calls one at a time, interleaved round by round:

- `agent`: POST straight to the agent (what its own client waits for);
- `openai`: POST /v1/chat/completions, unstreamed;
- `openai-stream`: the same with `stream: true`;
- `a2a-stream`: SendStreamingMessage at the capability's A2A door.

For each: the time to the first byte of the body (`ttfb`), to the first byte
of the output (`output`: for a stream, the event holding it) and to the end,
p50 and p95. Every answer is checked (a stream must end in `[DONE]` or the
task completed) and so is the ledger: one settled row per call.

    .venv/bin/python bench/doors/stream.py [--json] [--calls 40] [--rounds 3]
        [--delay-ms 200] [--postgres]
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

import aiohttp  # noqa: E402
from cryptography.fernet import Fernet  # noqa: E402

from bench._args import bench_parser  # noqa: E402
from bench._support import postgres_url, quantile, sqlite_url, uvicorn_app  # noqa: E402
from bench.doors.run import BODIES  # noqa: E402
from bench.gateway.run import (  # noqa: E402
    ADMIN_URL,
    CALLER,
    CAPABILITY,
    INPUT,
    check_ledger,
    gateway_server,
    prepare,
)

OPENAI_PATH, OPENAI_BODY = BODIES["openai"]
A2A_PATH, A2A_BODY = BODIES["a2a"]
WAYS: dict[str, tuple[str | None, dict[str, Any], bytes]] = {
    # (path on the gateway, None: the agent; body; the bytes that mark the output)
    "agent": (None, {"capability": CAPABILITY, "input": INPUT}, b'"output"'),
    "openai": (OPENAI_PATH, OPENAI_BODY, b'"content"'),
    "openai-stream": (OPENAI_PATH, {**OPENAI_BODY, "stream": True}, b'"content":"{'),
    "a2a-stream": (A2A_PATH, {**A2A_BODY, "method": "SendStreamingMessage"}, b"artifactUpdate"),
}
ENDS = {"openai-stream": b"data: [DONE]", "a2a-stream": b"TASK_STATE_COMPLETED"}


async def one(session: aiohttp.ClientSession, url: str, way: str) -> tuple[float, float, float]:
    """(ttfb, output, total) in ms of one call."""
    _path, body, marker = WAYS[way]
    started = time.perf_counter()
    first = output = None
    seen = b""
    async with session.post(url, json=body) as response:
        if response.status != 200:
            raise RuntimeError(f"{way}: {response.status}: {await response.text()}")
        async for chunk in response.content.iter_any():
            now = (time.perf_counter() - started) * 1000
            if first is None:
                first = now
            seen += chunk
            if output is None and marker in seen:
                output = now
    total = (time.perf_counter() - started) * 1000
    if (
        first is None
        or output is None
        or not seen.rstrip().endswith(b"}")
        and way
        in (
            "agent",
            "openai",
        )
    ):
        raise RuntimeError(f"{way}: no output in {seen[:300]!r}")
    if way in ENDS and ENDS[way] not in seen:
        raise RuntimeError(f"{way}: did not end well: {seen[-300:]!r}")
    return first, output, total


async def measure(gateway: str, agent: str, token: str, calls: int, rounds: int) -> dict[str, Any]:
    samples: dict[str, list[tuple[float, float, float]]] = {way: [] for way in WAYS}
    async with (
        aiohttp.ClientSession() as plain,
        aiohttp.ClientSession(headers={"Authorization": f"Bearer {token}"}) as session,
    ):

        async def call(way: str) -> tuple[float, float, float]:
            path = WAYS[way][0]
            if path is None:
                return await one(plain, agent, way)
            return await one(session, gateway + path, way)

        for way in WAYS:  # warm up: connections, caches, the first task write
            for _ in range(3):
                await call(way)
        for _ in range(rounds):
            for _ in range(calls):
                for way in WAYS:
                    samples[way].append(await call(way))
    out: dict[str, Any] = {}
    for way, values in samples.items():
        row: dict[str, Any] = {"calls": len(values)}
        for index, name in enumerate(("ttfb", "output", "total")):
            series = [value[index] for value in values]
            row[f"{name}_p50_ms"] = round(statistics.median(series), 2)
            row[f"{name}_p95_ms"] = round(quantile(series, 0.95), 2)
        out[way] = row
    return out


def main() -> int:
    parser = bench_parser(__doc__, calls=40, calls_help="calls per way per round", rounds=3)
    parser.add_argument("--delay-ms", type=int, default=200, help="the agent's thinking time")
    parser.add_argument("--postgres", action="store_true", help="the store on PostgreSQL")
    args = parser.parse_args()
    os.environ["HOLON_BENCH_AGENT_DELAY_MS"] = str(args.delay_ms)  # the agent's process reads it
    key = Fernet.generate_key().decode()
    with (
        tempfile.TemporaryDirectory() as tmp,
        uvicorn_app("slow_agent:app", HERE, "the slow agent") as agent_url,
        postgres_url(ADMIN_URL) if args.postgres else sqlite_url(Path(tmp)) as url,
    ):
        home = Path(tmp) / "home"
        token = prepare(url, key, home, agent_url)[CALLER]
        with gateway_server(url, key, home) as (gateway, _pid):
            results = asyncio.run(measure(gateway, agent_url, token, args.calls, args.rounds))
        through = sum(row["calls"] for way, row in results.items() if way != "agent")
        results["ledger"] = check_ledger(url, key, through + 3 * (len(WAYS) - 1))
    results["agent_delay_ms"] = args.delay_ms
    if args.json:
        print(json.dumps(results, indent=2))
        return 0 if results["ledger"]["consistent"] else 1
    print(f"agent thinks {args.delay_ms} ms; ms, p50 / p95")
    print("way            ttfb            output          total")
    for way in WAYS:
        row = results[way]
        cells = [
            f"{row[f'{n}_p50_ms']:7.2f} / {row[f'{n}_p95_ms']:6.2f}"
            for n in ("ttfb", "output", "total")
        ]
        print(f"{way:13} " + "  ".join(cells))
    print("ledger:", json.dumps(results["ledger"]))
    return 0 if results["ledger"]["consistent"] else 1


if __name__ == "__main__":
    sys.exit(main())
