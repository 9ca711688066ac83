"""What holding live calls to the contract, and a rate limit, cost: the same gateway, calls
with both on, with the contract only and with neither, interleaved in one run.

One agent (bench/executor/zero_agent.py) claims two capabilities:
`ticket.classify`, certified by an installed suite whose input and output
schemas the bench's input and the agent's answer satisfy (so every call is
checked twice, input and output, and passes), and `ticket.unchecked`, which
no suite certifies (no contract: nothing is checked). Two callers: one
whose mandate has no rate limit, one whose mandate has a rate limit too
high ever to refuse (bench/gateway/run.py's RATE_LIMIT), so its calls pay
the bucket's lock and write in the reservation transaction. The targets:
`off` (unchecked capability, no limit), `contract` (checked, no limit) and
`both` (checked, rate limited), and `control`, which is `off` again: what it
"adds" is the noise floor of the comparison. One gateway process
(bench/gateway/serve.py, lookups at their default 1 s TTL) over one store
answers both; the load is paced (16 callers at `--rate`, default 200/s),
rounds alternating between the targets so the machine's noise falls on
all. Each round first sends the four targets' calls interleaved in one
paced stream (each block of four calls to the four targets in a shuffled order:
bench/gateway/run.py drive_paced_mix says why), so that they meet the same load,
queue and noise: the differences of their latencies there are what the
contract, and the contract with a rate limit, add to a call (`p50_ms`,
`p95_ms`). Then each target alone, one paced stream each: the gateway's CPU
time per call of each, and its latency when the whole load is of that kind
(`alone_p50_ms`: it moves with the drift between streams, on PostgreSQL by a
millisecond either way from round to round, and includes what a target's
writes cost the other calls of their groups).

In-process, the checks themselves are timed (the cached contract lookup,
the input and the output check), the quick path and the full validator.

Goal (reported, never asserted): <= 0.1 ms added at p50 with both on.

    .venv/bin/python bench/gateway/contract.py [--json] [--rate 200] [--seconds 4]
        [--rounds 3] [--postgres ADMIN_URL [--function-from MIGRATION]]

With `--function-from`, every round runs its streams twice, with the
ledger's PostgreSQL function as it is now and as that migration made it
(`before`), so that a change of the function is measured in one run.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import secrets
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import aiohttp
import psycopg
from cryptography.fernet import Fernet
from sqlalchemy.engine import make_url

from bench._args import bench_parser
from bench._support import postgres_url, sqlite_url, suite_directory
from bench.gateway.run import (
    AGENT,
    CALLER,
    INPUT,
    LIMITED,
    agent_server,
    cpu_seconds,
    drive_paced,
    drive_paced_mix,
    gateway_server,
    percentile,
    prepare,
)
from evals.suites import contract_from_files, install_suite
from records import open_store

CHECKED = "ticket.classify"
UNCHECKED = "ticket.unchecked"
INPUT_SCHEMA = {
    "type": "object",
    "required": ["ticket"],
    "properties": {"ticket": {"type": "string", "maxLength": 10000}, "lang": {"enum": ["en"]}},
    "additionalProperties": False,
}
OUTPUT_SCHEMA = {
    "type": "object",
    "required": ["label", "score"],
    "properties": {
        "label": {"type": "string"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
    },
}
ANSWER = {"label": "ok", "score": 0.5}  # what the zero agent answers
SUITE_YAML = f"""\
schema_version: 1
id: bench-contract
version: 1
capability: {CHECKED}
title: The bench's contract
input_schema: {{$ref: schemas/input.json}}
output_schema: {{$ref: schemas/output.json}}
limits: {{max_cost_usd: "0.01", timeout_s: 5}}
threshold: 0.5
public: {{file: cases/public.jsonl}}
holdout: {{file: cases/holdout.jsonl}}
"""


def _suite(root: Path) -> Path:
    cases = {split: [{"id": split, "input": INPUT, "expected": ANSWER}] for split in SPLITS}
    return write_suite(root, SUITE_YAML, cases)


SPLITS = ("public", "holdout")


def write_suite(root: Path, suite_yaml: str, cases: dict[str, list[dict[str, Any]]]) -> Path:
    """A suite directory under `root` with this bench's schemas: `suite_yaml`, and each
    split's cases (a JSONL file by split name)."""
    return suite_directory(root, suite_yaml, (INPUT_SCHEMA, OUTPUT_SCHEMA), cases)


def setup(url: str, key: str, home: Path, agent_url: str, root: Path) -> dict[str, str]:
    """The bench's store (agent, both mandates, tokens by caller), then the second capability
    and the suite."""
    tokens = prepare(url, key, home, agent_url, rate_limit=True)
    store = open_store(url, secret_key=key)
    try:
        manifest = dict(store.agents.get(AGENT).manifest)
        manifest["capabilities"] = [CHECKED, UNCHECKED]
        manifest["version"] = "1.0.1"
        store.agents.register(manifest)
        for mandate_id in ("bench-live", "bench-limited"):
            mandate = dict(store.mandates.get(mandate_id).document)
            mandate["capabilities"] = [CHECKED, UNCHECKED]
            store.mandates.grant(mandate)
        install_suite(store, _suite(root))
    finally:
        store.close()
    return tokens


def _function(migration: Path) -> str:
    """The `holon_ledger_apply` that a migration file installs (its FUNCTION)."""
    spec = importlib.util.spec_from_file_location(f"holon_bench_{migration.stem}", migration)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.FUNCTION)


class Swap:
    """PostgreSQL: puts another migration's `holon_ledger_apply` in place and back, between
    streams (the gateway's connections use the new definition from their next call)."""

    def __init__(self, url: str, before: Path) -> None:
        self._url = make_url(url).set(drivername="postgresql").render_as_string(False)
        with psycopg.connect(self._url) as connection:  # the store's own, as upgraded
            found = connection.execute(
                "SELECT pg_get_functiondef('holon_ledger_apply'::regproc)"
            ).fetchone()
        assert found is not None
        self._functions = {"before": _function(before), "now": str(found[0])}

    def __call__(self, variant: str) -> None:
        with psycopg.connect(self._url, autocommit=True) as connection:
            connection.execute(self._functions[variant])


async def load(
    gateway_url: str,
    pid: int,
    tokens: dict[str, str],
    rate: float,
    seconds: float,
    rounds: int,
    swap: Swap | None = None,
) -> dict[str, Any]:
    url = f"{gateway_url}/v1/agents/{AGENT}/invoke"

    def target(capability: str, caller: str) -> tuple[dict[str, str], bytes]:
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {tokens[caller]}"}
        return headers, json.dumps({"capability": capability, "input": INPUT}).encode()

    targets = {
        "off": target(UNCHECKED, CALLER),
        "contract": target(CHECKED, CALLER),
        "both": target(CHECKED, LIMITED),
        "control": target(UNCHECKED, CALLER),  # `off` again: the noise floor
    }
    calls = max(50, int(rate * seconds))
    names = list(targets)
    variants = ["now", "before"] if swap is not None else ["now"]
    mixed = {v: {name: [] for name in targets} for v in variants}
    sent = {v: {name: [] for name in targets} for v in variants}
    cpu = {v: dict.fromkeys(targets, 0.0) for v in variants}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        for headers, body in targets.values():  # warm pools, caches, the compiled contract
            await drive_paced(session, url, headers, 400, 16, rate, body)
        for _ in range(rounds):
            for variant in variants:
                if swap is not None:
                    swap(variant)
                    headers, body = targets["both"]  # its new plans made before the timing
                    await drive_paced(session, url, headers, 50, 16, rate, body)
                # Side by side: the targets' calls interleaved in one paced stream.
                each = await drive_paced_mix(session, url, list(targets.values()), calls, 16, rate)
                for name, (values, _) in zip(names, each, strict=True):
                    mixed[variant][name] += values
                # One target a stream: what each costs the gateway's CPU, and its latency
                # when the whole load is of that kind.
                for name, (headers, body) in targets.items():
                    before = cpu_seconds(pid)
                    values, _ = await drive_paced(session, url, headers, calls, 16, rate, body)
                    cpu[variant][name] += cpu_seconds(pid) - before
                    sent[variant][name] += values
        if swap is not None:
            swap("now")
    out = _summary(mixed["now"], sent["now"], cpu["now"], rounds * calls)
    if swap is not None:
        out["before"] = _summary(mixed["before"], sent["before"], cpu["before"], rounds * calls)
    return out


def _summary(
    mixed: dict[str, list[float]],
    sent: dict[str, list[float]],
    cpu: dict[str, float],
    calls: int,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        name: {
            "p50_ms": round(percentile(mixed[name], 0.50), 3),
            "p95_ms": round(percentile(mixed[name], 0.95), 3),
            "alone_p50_ms": round(percentile(values, 0.50), 3),
            "alone_p95_ms": round(percentile(values, 0.95), 3),
            "gateway_cpu_ms_per_call": round(cpu[name] * 1000 / calls, 3),
            "calls": len(values) + len(mixed[name]),
        }
        for name, values in sent.items()
    }
    for name in ("contract", "both", "control"):
        out[f"{name}_added"] = {
            key: round(out[name][key] - out["off"][key], 3)
            for key in (
                "p50_ms",
                "p95_ms",
                "alone_p50_ms",
                "alone_p95_ms",
                "gateway_cpu_ms_per_call",
            )
        }
    return out


def micro(root: Path) -> dict[str, float]:
    """The checks alone, in microseconds per call (best of 5 runs of 20,000)."""
    directory = _suite(root / "micro")
    files = {
        str(p.relative_to(directory)): p.read_text() for p in directory.rglob("*") if p.is_file()
    }
    contract = contract_from_files("bench-contract", 1, CHECKED, files)
    # The full validator: the same schemas with a `$ref` (no quick path for those).
    slow_files = dict(files)
    slow_files["schemas/output.json"] = json.dumps(
        {"$defs": {"o": OUTPUT_SCHEMA}, "$ref": "#/$defs/o"}
    )
    full = contract_from_files("bench-contract", 1, CHECKED, slow_files)
    output = dict(ANSWER)

    def best(fn: Any, n: int = 20_000) -> float:
        times = []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(n):
                fn()
            times.append((time.perf_counter() - started) / n * 1e6)
        return round(min(times), 2)

    return {
        "input_quick_us": best(lambda: contract.input_violation(INPUT)),
        "output_quick_us": best(lambda: contract.output_violation(output)),
        "output_full_validator_us": best(lambda: full.output_violation(output)),
    }


NAMES = ("off", "contract", "both", "control", "contract_added", "both_added", "control_added")


def main() -> None:
    parser = bench_parser(__doc__, rounds=3)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--postgres", metavar="ADMIN_URL", help="PostgreSQL instead of SQLite")
    parser.add_argument(
        "--function-from",
        metavar="MIGRATION",
        type=Path,
        help="with --postgres: every round runs again with the holon_ledger_apply that this"
        " migration file installs (`before`), e.g. records/migrations/versions/"
        "0013_ledger_apply.py: the function's before and after in one run",
    )
    args = parser.parse_args()
    if args.function_from and not args.postgres:
        parser.error("--function-from needs --postgres")
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="holon-bench-contract-") as tmp:
        root = Path(tmp)
        results["micro"] = micro(root)
        stores = postgres_url(args.postgres) if args.postgres else sqlite_url(root)
        with agent_server() as agent_url, stores as url:
            key = Fernet.generate_key().decode()
            home = root / f"home-{secrets.token_hex(4)}"
            tokens = setup(url, key, home, agent_url, root)
            swap = Swap(url, args.function_from) if args.function_from else None
            with gateway_server(url, key, home) as (gateway_url, pid):
                results["paced"] = asyncio.run(
                    load(gateway_url, pid, tokens, args.rate, args.seconds, args.rounds, swap)
                )
        results["backend"] = "postgresql" if args.postgres else "sqlite"
    if args.json:
        print(json.dumps(results, indent=2))
        return
    paced = results["paced"]
    print(f"micro (us per call): {results['micro']}")
    print(f"paced 16@{args.rate:g}/s on {results['backend']}:")
    for name in NAMES:
        print(f"  {name:14} {paced[name]}")
    if "before" in paced:
        print(f"with {args.function_from.name}'s function, the same rounds:")
        for name in NAMES:
            print(f"  {name:14} {paced['before'][name]}")


if __name__ == "__main__":
    main()
