"""The executor's per-call cost, as a ratio to a bare aiohttp client in the same run.

Against a zero-latency agent (a bare ASGI callable):

- loopback: the agent runs under uvicorn in a subprocess, so the client
  process's CPU time is the client's alone. Per call, at concurrency 16:
  wall time and client CPU time of `Executor.execute` vs a bare
  `aiohttp.ClientSession.post` + `json.loads`; the overhead is the difference.
- in-process (`asgi:`): `Executor.execute` vs a bare `httpx.ASGITransport`
  client POST + `json.loads`, same app, same process.
- calls/s through the executor at concurrency 16 and 64 (and the bare client's).
- memory: RSS before and after `--calls` executor calls at concurrency 64
  (after a warm-up), which should stay flat.

Goals (reported, never asserted): overhead <= 0.3 ms/call at concurrency 16,
>= 2,000 calls/s at concurrency 64, memory flat.

    .venv/bin/python bench/executor/run.py [--json] [--calls 100000] [--timing-calls 4000]
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import aiohttp  # noqa: E402
import httpx  # noqa: E402

from agents import AgentLimits, CallLimits, Executor, Manifest, Pricing  # noqa: E402
from bench._args import bench_parser  # noqa: E402

INPUT = {"ticket": "My invoice INV-7 was charged twice", "lang": "en"}
LIMITS = CallLimits(max_cost_usd=Decimal("0.05"), timeout_s=30)
PRICING = Pricing(per_call_usd=Decimal("0.001"), per_1k_input_tokens_usd=Decimal("0.0005"))


def manifest(endpoint: str, protocol: str) -> Manifest:
    return Manifest(
        id="bench/zero",
        version="1.0.0",
        protocol=protocol,  # type: ignore[arg-type]
        endpoint=endpoint,
        capabilities=("ticket.classify",),
        limits=AgentLimits(max_cost_usd=Decimal("0.05"), timeout_s=Decimal(20)),
        pricing=PRICING,
    )


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        pages = int(handle.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1024 / 1024


async def drive(
    call: Callable[[], Awaitable[Any]], calls: int, concurrency: int
) -> dict[str, float]:
    """Run `calls` calls with `concurrency` workers; wall and client-CPU time per call."""
    remaining = calls

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call()

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "calls_per_s": calls / wall,
        "wall_ms_per_call": wall * 1000 / calls,
        "cpu_ms_per_call": cpu * 1000 / calls,
    }


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [sys.executable, "-m", "uvicorn", "zero_agent:app", "--app-dir", str(HERE)]
    command += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    process = subprocess.Popen(command)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}/"
        except OSError:
            time.sleep(0.05)
    process.terminate()
    raise RuntimeError("the zero-latency agent did not start")


async def loopback(url: str, timing_calls: int, memory_calls: int) -> dict[str, Any]:
    body = json.dumps({"capability": "ticket.classify", "input": INPUT}).encode()
    agent = manifest(url, "holon-http")
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession() as session, Executor() as executor:

        async def bare() -> None:
            async with session.post(
                url, data=body, headers={"Content-Type": "application/json"}
            ) as response:
                json.loads(await response.read())

        async def ours() -> None:
            outcome = await executor.execute(agent, "ticket.classify", INPUT, LIMITS)
            if not outcome.ok:
                raise RuntimeError(f"bench call failed: {outcome}")

        calls = {"bare": bare, "executor": ours}
        for concurrency in (16, 64):
            for call in calls.values():  # warm every pool
                await drive(call, 500, concurrency)
            # Interleave to share the machine's noise evenly.
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in calls}
            for _ in range(3):
                for name, call in calls.items():
                    runs[name].append(await drive(call, timing_calls // 3, concurrency))
            out[f"c{concurrency}"] = {name: _median(results) for name, results in runs.items()}
        await drive(ours, 2000, 64)
        before = rss_mb()
        started = time.perf_counter()
        await drive(ours, memory_calls, 64)
        out["memory"] = {
            "calls": memory_calls,
            "rss_before_mb": round(before, 1),
            "rss_after_mb": round(rss_mb(), 1),
            "seconds": round(time.perf_counter() - started, 1),
        }
    return out


async def in_process(timing_calls: int) -> dict[str, Any]:
    import zero_agent

    agent = manifest("asgi:zero_agent:app", "asgi")
    body = json.dumps({"capability": "ticket.classify", "input": INPUT}).encode()
    async with (
        Executor() as executor,
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=zero_agent.app), base_url="http://localhost"
        ) as client,
    ):

        async def bare() -> None:
            response = await client.post(
                "/", content=body, headers={"Content-Type": "application/json"}
            )
            json.loads(response.content)

        transport = httpx.ASGITransport(app=zero_agent.app)
        headers = {"Content-Type": "application/json"}

        async def bare_transport() -> None:
            request = httpx.Request("POST", "http://localhost/", headers=headers, content=body)
            response = await transport.handle_async_request(request)
            json.loads(await response.aread())

        async def ours() -> None:
            outcome = await executor.execute(agent, "ticket.classify", INPUT, LIMITS)
            if not outcome.ok:
                raise RuntimeError(f"bench call failed: {outcome}")

        calls = {"bare": bare, "bare_transport": bare_transport, "executor": ours}
        for call in calls.values():
            await drive(call, 500, 16)
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in calls}
        for _ in range(3):
            for name, call in calls.items():
                runs[name].append(await drive(call, timing_calls // 3, 16))
        return {"c16": {name: _median(results) for name, results in runs.items()}}


def _median(results: list[dict[str, float]]) -> dict[str, float]:
    return {
        key: round(sorted(result[key] for result in results)[len(results) // 2], 4)
        for key in results[0]
    }


def _minus(a: dict[str, float], b: dict[str, float], key: str) -> float:
    """What `a` adds over `b` in milliseconds per call (`key`: wall or cpu)."""
    return round(a[key] - b[key], 4)


def _over(a: dict[str, float], b: dict[str, float], key: str) -> float:
    return round(a[key] / b[key], 3)


def summarise(loop_numbers: dict[str, Any], asgi_numbers: dict[str, Any]) -> dict[str, Any]:
    c16, c64 = loop_numbers["c16"], loop_numbers["c64"]
    memory = loop_numbers["memory"]
    asgi = asgi_numbers["c16"]
    wall, cpu = "wall_ms_per_call", "cpu_ms_per_call"
    executor, bare = c16["executor"], c16["bare"]
    return {
        "loopback_c16": c16,
        "loopback_c64": c64,
        "in_process_c16": asgi,
        "memory": memory,
        "overhead_ms_per_call_c16_wall": _minus(executor, bare, wall),
        "overhead_ms_per_call_c16_cpu": _minus(executor, bare, cpu),
        "ratio_c16_wall": _over(executor, bare, wall),
        "ratio_c16_cpu": _over(executor, bare, cpu),
        "in_process_ratio_c16_wall": _over(asgi["executor"], asgi["bare"], wall),
        "in_process_overhead_ms_per_call_c16": _minus(asgi["executor"], asgi["bare"], wall),
        "in_process_overhead_vs_bare_transport_ms_per_call_c16": _minus(
            asgi["executor"], asgi["bare_transport"], wall
        ),
        "in_process_vs_loopback_bare_aiohttp_ratio_c16": _over(asgi["executor"], bare, wall),
        "calls_per_s_c64": round(c64["executor"]["calls_per_s"]),
        "memory_growth_mb": round(memory["rss_after_mb"] - memory["rss_before_mb"], 1),
        "goals": {
            "overhead_le_0.3ms_c16": "see overhead_ms_per_call_c16_*",
            "calls_per_s_c64_ge_2000": c64["executor"]["calls_per_s"] >= 2000,
        },
    }


def main() -> None:
    parser = bench_parser(__doc__, calls=10_000, calls_help="calls for the memory figure")
    parser.add_argument("--timing-calls", type=int, default=3_000, help="calls per timing run")
    args = parser.parse_args()
    process, url = start_server()
    try:
        loop_numbers = asyncio.run(loopback(url, args.timing_calls, args.calls))
    finally:
        process.terminate()
        process.wait(10)
    asgi_numbers = asyncio.run(in_process(args.timing_calls))
    result = summarise(loop_numbers, asgi_numbers)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for concurrency in ("c16", "c64"):
        for name, numbers in result[f"loopback_{concurrency}"].items():
            print(
                f"loopback {concurrency} {name:>13}: {numbers['calls_per_s']:8.0f} calls/s  "
                f"wall {numbers['wall_ms_per_call']:.3f} ms/call  "
                f"client cpu {numbers['cpu_ms_per_call']:.3f} ms/call"
            )
    for name, numbers in result["in_process_c16"].items():
        print(
            f"in-process c16 {name:>14}: {numbers['calls_per_s']:8.0f} calls/s  "
            f"wall {numbers['wall_ms_per_call']:.3f} ms/call"
        )
    print(
        f"overhead at c16: {result['overhead_ms_per_call_c16_wall']:.3f} ms/call wall, "
        f"{result['overhead_ms_per_call_c16_cpu']:.3f} ms/call client CPU "
        f"(ratio {result['ratio_c16_wall']}x wall, {result['ratio_c16_cpu']}x CPU; goal <= 0.3 ms)"
    )
    print(
        f"in-process overhead at c16: {result['in_process_overhead_ms_per_call_c16']:.3f} ms/call "
        "vs an httpx.AsyncClient over ASGITransport "
        f"(ratio {result['in_process_ratio_c16_wall']}x), "
        f"{result['in_process_overhead_vs_bare_transport_ms_per_call_c16']:.3f} ms/call vs the "
        "bare ASGITransport; "
        f"{result['in_process_vs_loopback_bare_aiohttp_ratio_c16']}x a loopback bare aiohttp call"
    )
    print(f"executor calls/s at c64: {result['calls_per_s_c64']} (goal >= 2000)")
    memory = result["memory"]
    print(
        f"memory: {memory['rss_before_mb']} MB -> {memory['rss_after_mb']} MB after "
        f"{memory['calls']} calls ({memory['seconds']} s; goal flat)"
    )


if __name__ == "__main__":
    main()
