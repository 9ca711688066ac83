"""Each agent protocol's executor overhead, as a ratio to a bare client of that protocol.

In one run, against agents served by uvicorn in subprocesses (so this
process's CPU time is the client's alone; `protocol_agents.py`):

- `openai-chat`: `Executor.execute` vs a bare aiohttp POST of the same
  chat-completions body + parsing the answer and its message content
  (`json.loads` twice), against a zero-latency OpenAI-compatible server;
- `mcp`: `Executor.execute` vs the official SDK's client
  (`streamablehttp_client` + `ClientSession.call_tool` on one initialized
  session), against the same FastMCP server.

Per call at concurrency `--concurrency` (default 16), wall and client CPU,
rounds interleaved to share the machine's noise; the figures are medians
of the rounds and the ratio is executor / bare client.

    .venv/bin/python bench/executor/protocols.py [--json] [--calls 2000] [--rounds 3]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import aiohttp  # noqa: E402
from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamablehttp_client  # noqa: E402
from run import drive  # noqa: E402

from agents import CallLimits, Executor, manifest_from_dict  # noqa: E402
from bench._args import bench_parser  # noqa: E402
from bench._support import uvicorn_app  # noqa: E402

TICKET = {"subject": "Refund please", "body": "I was charged twice for INV-7."}
LIMITS = CallLimits(timeout_s=30)


def _manifest(protocol: str, endpoint: str, section: dict[str, Any]) -> dict[str, Any]:
    key = "mcp" if protocol == "mcp" else "openai_chat"
    return {
        "schema_version": 1,
        "id": "bench/protocol",
        "version": "1.0.0",
        "protocol": protocol,
        "endpoint": endpoint,
        "capabilities": ["ticket.classify"],
        "pricing": {"per_1m_input_tokens_usd": "0.15", "per_1m_output_tokens_usd": "0.6"},
        key: section,
    }


async def _compare(
    calls: dict[str, Callable[[], Awaitable[Any]]], n: int, rounds: int, concurrency: int
) -> dict[str, Any]:
    for call in calls.values():  # warm pools and sessions
        await drive(call, 200, concurrency)
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            runs[name].append(await drive(call, n, concurrency))
    out: dict[str, Any] = {}
    for name, measured in runs.items():
        out[name] = {
            key: round(statistics.median(r[key] for r in measured), 4) for key in measured[0]
        }
    for key in ("wall_ms_per_call", "cpu_ms_per_call"):
        out[f"ratio_{key}"] = round(out["executor"][key] / out["bare"][key], 2)
        out[f"overhead_{key}"] = round(out["executor"][key] - out["bare"][key], 4)
    return out


async def openai_chat(url: str, n: int, rounds: int, concurrency: int) -> dict[str, Any]:
    section = {"model": "bench-model", "template": "Classify: {{input}}"}
    agent = manifest_from_dict(_manifest("openai-chat", url + "v1", section))
    from agents._openai import chat_request

    body = chat_request(agent, "ticket.classify", TICKET)
    headers = {"Content-Type": "application/json", "Authorization": "Bearer sk-bench"}
    async with aiohttp.ClientSession() as session, Executor() as executor:

        async def bare() -> None:
            async with session.post(url + "v1/chat/completions", data=body, headers=headers) as r:
                answer = json.loads(await r.read())
                json.loads(answer["choices"][0]["message"]["content"])

        async def ours() -> None:
            outcome = await executor.execute(
                agent, "ticket.classify", TICKET, LIMITS, secret="sk-bench"
            )
            if not outcome.ok:
                raise RuntimeError(f"bench call failed: {outcome}")

        return await _compare({"bare": bare, "executor": ours}, n, rounds, concurrency)


async def mcp(url: str, n: int, rounds: int, concurrency: int) -> dict[str, Any]:
    endpoint = url + "mcp"
    agent = manifest_from_dict(
        _manifest("mcp", endpoint, {"tools": {"ticket.classify": "classify"}})
    )
    async with (
        streamablehttp_client(endpoint) as (read, write, _),
        ClientSession(read, write) as session,
        Executor() as executor,
    ):
        await session.initialize()

        async def bare() -> None:
            result = await session.call_tool("classify", TICKET)
            if result.isError or result.structuredContent is None:
                raise RuntimeError(f"bench call failed: {result}")

        async def ours() -> None:
            outcome = await executor.execute(agent, "ticket.classify", TICKET, LIMITS)
            if not outcome.ok:
                raise RuntimeError(f"bench call failed: {outcome}")

        return await _compare({"bare": bare, "executor": ours}, n, rounds, concurrency)


def main() -> None:
    parser = bench_parser(__doc__, calls=2000, rounds=3)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    report: dict[str, Any] = {}
    with uvicorn_app("protocol_agents:openai", HERE, "the OpenAI-compatible agent") as url:
        report["openai-chat"] = asyncio.run(
            openai_chat(url, args.calls, args.rounds, args.concurrency)
        )
    with uvicorn_app("protocol_agents:mcp", HERE, "the MCP agent") as url:
        report["mcp"] = asyncio.run(mcp(url, args.calls, args.rounds, args.concurrency))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for protocol, figures in report.items():
        bare, ours = figures["bare"], figures["executor"]
        print(
            f"{protocol:12} c{args.concurrency}: executor {ours['wall_ms_per_call']:.3f} ms wall, "
            f"{ours['cpu_ms_per_call']:.3f} ms CPU a call; bare client "
            f"{bare['wall_ms_per_call']:.3f} / {bare['cpu_ms_per_call']:.3f} ms; ratio "
            f"{figures['ratio_wall_ms_per_call']} wall, {figures['ratio_cpu_ms_per_call']} CPU"
        )


if __name__ == "__main__":
    main()
