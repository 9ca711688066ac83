"""The OpenAI door's own work per call, in process: what it does beyond /invoke's.

bench/doors/run.py measures the door end to end against
POST /v1/capabilities/{cap}/invoke, where two shared cores' noise is
milliseconds; this isolates the difference, which is all in the mapping:

- `invoke`: parse the /invoke body, check its keys, write its answer;
- `openai`: parse the completion request, check its parameters, find and
  parse the last user message's JSON text, write the chat completion (the
  output as JSON text inside it).

Both run alternately in one process over the same input and answer (the
bench's zero agent's), `--calls` times each per round, and the per-call
medians are reported in microseconds with their difference.

    .venv/bin/python bench/doors/openai_mapping.py [--json] [--calls 20000] [--rounds 5]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench._args import bench_parser  # noqa: E402
from bench.gateway.run import CAPABILITY, INPUT  # noqa: E402
from gateway.server._openai import _check_parameters, _completion, _user_input  # noqa: E402
from gateway.server._routes_calls import INVOKE_KEYS  # noqa: E402
from gateway.web import body_object, parse_body  # noqa: E402
from schema.jsontext import dumps  # noqa: E402

INVOKE = json.dumps({"input": INPUT}).encode()
CHAT = json.dumps(
    {"model": CAPABILITY, "messages": [{"role": "user", "content": json.dumps(INPUT)}]}
).encode()
ANSWER: dict[str, Any] = {
    "output": {"label": "billing", "priority": "high", "product": "invoices"},
    "usage": None,
    "cost_usd": "0.0001",
    "cost_source": "priced",
    "agent": "bench/zero",
    "agent_version": "1.0.0",
    "mandate": "bench",
    "request_id": "01JC0000000000000000000000",
    "latency_ms": 0.412,
    "routing": {"candidates": 1, "tried": []},
}


async def _invoke() -> bytes:
    body = body_object(parse_body(INVOKE), "the body")
    assert all(key in INVOKE_KEYS for key in body)
    return dumps(ANSWER).encode()


async def _openai() -> bytes:
    body = body_object(parse_body(CHAT), "the body")
    _check_parameters(body)
    await _user_input(body["messages"])
    return _completion(ANSWER).encode()


async def _per_call_us(work: Any, calls: int) -> float:
    started = time.perf_counter()
    for _ in range(calls):
        await work()
    return (time.perf_counter() - started) / calls * 1e6


async def measure(calls: int, rounds: int) -> dict[str, Any]:
    samples: dict[str, list[float]] = {"invoke": [], "openai": []}
    for _ in range(rounds):
        samples["invoke"].append(await _per_call_us(_invoke, calls))
        samples["openai"].append(await _per_call_us(_openai, calls))
    base = statistics.median(samples["invoke"])
    door = statistics.median(samples["openai"])
    return {
        "calls": calls * rounds,
        "invoke_us": round(base, 2),
        "openai_us": round(door, 2),
        "added_us": round(door - base, 2),
    }


def main() -> int:
    parser = bench_parser(__doc__, calls=20000, calls_help="calls per round", rounds=5)
    args = parser.parse_args()
    results = asyncio.run(measure(args.calls, args.rounds))
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        print(
            f"invoke {results['invoke_us']} us, openai {results['openai_us']} us a call: "
            f"the door adds {results['added_us']} us ({results['calls']} calls each)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
