"""holon's /v1/chat/completions against LiteLLM's proxy, in front of one upstream, in one run.

One zero-latency OpenAI-compatible upstream (bench/doors/fake_openai.py, a
bare ASGI callable under uvicorn in a subprocess) answers everyone. Three
ways to reach it, each called with the same chat request (one user message,
the bench's input as JSON text) from one aiohttp client with keep-alive
connections, closed loop, interleaved round by round so the machine's noise
falls on all three:

- `direct`: POST {upstream}/v1/chat/completions (the baseline);
- `holon`: POST /v1/chat/completions of one gateway process
  (bench/gateway/serve.py, SQLite, one uvicorn worker), `model` the
  capability, served by an `openai-chat` agent whose endpoint is the
  upstream, under a caller's mandate with a per-call cap and a budget, the
  capability certified by an installed suite (bench/gateway/contract.py's),
  so that each call is: bearer-token auth, the mandate, a budget
  reservation, the input checked against the contract, the upstream's
  answer read (model identity, JSON content, usage priced per token), the
  output checked, a ledger row written and settled;
- `litellm`: POST /v1/chat/completions of a LiteLLM proxy (one worker, its
  own uvicorn), a config with one model routed to the same upstream
  (`openai/` provider, `api_base`) and a `master_key`, and no database: each
  call is the master-key check, the router's pick of the one deployment,
  the call through LiteLLM's OpenAI client, its response object rebuilt
  and its cost computed from the local model map, no spend rows, budgets
  or virtual keys (those need its PostgreSQL database).

For each way and concurrency: p50 and p95, what they add over `direct`,
calls/s (calls over the wall time of their streams) and the CPU time per
call of the gateway's process tree (user + system, /proc). Every answer's
content must be the upstream's, and the ledger must hold one settled row per
call through holon.

LiteLLM is not a holon dependency: it is installed with pip into a venv of
its own outside the repository (default
`$TMPDIR/holon-bench-litellm/<version>`) on first use, its telemetry off and
its model-cost map the local copy. `--no-litellm` runs holon's side alone.

    .venv/bin/python bench/doors/litellm.py [--json] [--calls 300] [--rounds 3]
        [--concurrency 1,8,32] [--litellm-dir DIR] [--no-litellm]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import aiohttp  # noqa: E402
import fake_openai  # noqa: E402
from cryptography.fernet import Fernet  # noqa: E402

from bench._args import bench_parser, compared_tool  # noqa: E402
from bench._support import by_load, closed_loop, free_port, latency_rows, process, sqlite_url  # noqa: E402
from bench.gateway.contract import _suite  # noqa: E402
from bench.gateway.run import (  # noqa: E402
    AGENT,
    CALLER,
    CAPABILITY,
    INPUT,
    check_ledger,
    cpu_seconds,
    gateway_server,
    prepare,
)
from evals.suites import install_suite  # noqa: E402
from records import open_store  # noqa: E402

# The newest release whose `proxy` extra resolves from the package index (1.108+ pin
# proxy packages the index does not carry).
LITELLM_VERSION = "1.106.12"
LITELLM_MODEL = "bench-upstream"
MASTER_KEY = "sk-bench-master"
MESSAGES = [{"role": "user", "content": json.dumps(INPUT)}]
WARMUP = 30


def litellm_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",  # no fetch of the cost map at start-up
        LITELLM_TELEMETRY="False",
        LITELLM_LOG="ERROR",
        LITELLM_MODE="PRODUCTION",
        NO_COLOR="1",
    )
    return env


def ensure_litellm(directory: Path, version: str) -> Path:
    """The python of a venv in `directory` holding `litellm[proxy]`, installed first if
    missing (in a staging folder renamed into place once complete, so an interrupted
    install is retried)."""
    python = directory / "bin" / "python"
    if python.exists():
        return python
    directory.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f"{directory.name}.", dir=directory.parent))
    print(f"installing litellm[proxy]=={version} into {directory} (once)...", file=sys.stderr)
    subprocess.run([sys.executable, "-m", "venv", str(staging)], check=True)
    command = [str(staging / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    command += ["--disable-pip-version-check", f"litellm[proxy]=={version}"]
    subprocess.run(command, check=True, stdout=sys.stderr, env=litellm_env())
    if directory.exists():
        shutil.rmtree(directory)
    staging.rename(directory)  # the venv's python resolves its packages from where it is
    return python


@contextmanager
def litellm_server(python: Path, upstream: str, root: Path) -> Iterator[tuple[str, int]]:
    """A LiteLLM proxy (one worker) routing LITELLM_MODEL to `upstream`; its URL and pid."""
    config = root / "litellm.yaml"
    config.write_text(
        json.dumps(  # JSON is YAML
            {
                "model_list": [
                    {
                        "model_name": LITELLM_MODEL,
                        "litellm_params": {
                            "model": f"openai/{fake_openai.MODEL}",
                            "api_base": upstream + "v1",
                            "api_key": "sk-upstream",
                        },
                    }
                ],
                "general_settings": {"master_key": MASTER_KEY},
                "litellm_settings": {"telemetry": False, "set_verbose": False},
            }
        )
    )
    port = free_port()
    command = [str(python), "-m", "litellm.proxy.proxy_cli", "--config", str(config)]
    command += ["--host", "127.0.0.1", "--port", str(port), "--num_workers", "1"]
    command += ["--telemetry", "False"]
    with process(
        command, port, "the LiteLLM proxy", litellm_env(), start_s=180, stdout=sys.stderr
    ) as pid:
        yield f"http://127.0.0.1:{port}", pid


@contextmanager
def upstream_server() -> Iterator[tuple[str, int]]:
    """fake_openai.app under uvicorn in a subprocess; its URL and pid."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", "fake_openai:app", "--app-dir", str(HERE)]
    command += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    with process(command, port, "the fake upstream") as pid:
        yield f"http://127.0.0.1:{port}/", pid


def tree_cpu(pid: int) -> float:
    """User + system CPU seconds of a process and its descendants so far."""
    total, stack = 0.0, [pid]
    while stack:
        current = stack.pop()
        try:
            total += cpu_seconds(current)
            for task in Path(f"/proc/{current}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue
    return total


async def drive(
    session: aiohttp.ClientSession, target: dict[str, Any], calls: int, concurrency: int
) -> tuple[list[float], float]:
    """`calls` calls at `concurrency`: their latencies in ms, and the wall time in s."""
    data = json.dumps({"model": target["model"], "messages": MESSAGES}).encode()
    headers = {"Content-Type": "application/json", **target["headers"]}
    url = target["url"] + "/v1/chat/completions"

    def refusal(status: int, payload: bytes) -> str | None:
        if status != 200:
            return f"{target['name']}: {status}: {payload[:300]!r}"
        content = json.loads(payload)["choices"][0]["message"]["content"]
        if json.loads(content) != fake_openai.CONTENT:
            return f"{target['name']}: answered {content!r}"
        return None

    return await closed_loop(session, url, data, headers, calls, concurrency, refusal)


async def measure(
    targets: list[dict[str, Any]], calls: int, rounds: int, levels: list[int]
) -> dict[str, Any]:
    connector = aiohttp.TCPConnector(limit=max(levels) * 2, keepalive_timeout=2.0)
    out: dict[str, Any] = {}
    async with aiohttp.ClientSession(connector=connector) as session:
        for target in targets:  # warm up: imports, caches, connections
            await drive(session, target, WARMUP, 1)
            target["through"] = WARMUP
        for concurrency in levels:
            samples: dict[str, list[float]] = {t["name"]: [] for t in targets}
            wall = dict.fromkeys(samples, 0.0)
            cpu = dict.fromkeys(samples, 0.0)
            for _ in range(rounds):
                for target in targets:
                    before = tree_cpu(target["pid"])
                    latencies, seconds = await drive(session, target, calls, concurrency)
                    cpu[target["name"]] += tree_cpu(target["pid"]) - before
                    samples[target["name"]] += latencies
                    wall[target["name"]] += seconds
                    target["through"] += calls
            rows = latency_rows(samples, "direct")
            for name, row in rows.items():
                row["calls_per_s"] = round(row["calls"] / wall[name], 1)
                row["cpu_ms_per_call"] = round(cpu[name] * 1000 / row["calls"], 3)
            out[f"c{concurrency}"] = rows
    return out


def setup_holon(url: str, key: str, home: Path, upstream: str, root: Path) -> str:
    """The bench's store with its agent an openai-chat one at `upstream` and the capability
    certified by a suite; the caller's token."""
    token = prepare(url, key, home, upstream)[CALLER]
    store = open_store(url, secret_key=key)
    try:
        store.agents.register(
            {
                "schema_version": 1,
                "id": AGENT,
                "version": "1.0.1",
                "protocol": "openai-chat",
                "endpoint": upstream + "v1",
                "capabilities": [CAPABILITY],
                "openai_chat": {"model": fake_openai.MODEL, "template": "{{input}}"},
                "limits": {"max_cost_usd": "0.05", "timeout_s": 20},
                "pricing": {"per_1m_input_tokens_usd": "0.15", "per_1m_output_tokens_usd": "0.60"},
            }
        )
        install_suite(store, _suite(root))
    finally:
        store.close()
    return token


def report(results: dict[str, Any]) -> None:
    print(f"ms; added = over `direct` at the same concurrency; versions {results['versions']}")
    print("way      conc  p50     p95     +p50    +p95    calls/s  cpu ms/call")
    for concurrency, name, row in by_load(results):
        print(
            f"{name:8} {concurrency:>4}  {row['p50_ms']:6.2f}  {row['p95_ms']:6.2f}  "
            f"{row['p50_added_ms']:6.2f}  {row['p95_added_ms']:6.2f}  "
            f"{row['calls_per_s']:7.1f}  {row['cpu_ms_per_call']:7.3f}"
        )
    print("ledger:", json.dumps(results["ledger"]))


def main() -> int:
    parser = bench_parser(__doc__, calls=300, calls_help="calls per way per round", rounds=3)
    parser.add_argument("--concurrency", default="1,8,32", help="levels, comma-separated")
    compared_tool(
        parser,
        "litellm",
        LITELLM_VERSION,
        where="where LiteLLM's venv is (or gets installed)",
        alone="LiteLLM not installed",
    )
    args = parser.parse_args()
    levels = [int(level) for level in args.concurrency.split(",")]
    python = None if args.no_litellm else ensure_litellm(args.litellm_dir, LITELLM_VERSION)
    key = Fernet.generate_key().decode()
    with (
        tempfile.TemporaryDirectory(prefix="holon-bench-litellm-") as tmp,
        upstream_server() as (upstream, upstream_pid),
        sqlite_url(Path(tmp)) as url,
    ):
        root, home = Path(tmp), Path(tmp) / "home"
        token = setup_holon(url, key, home, upstream, root)
        with (
            gateway_server(url, key, home) as (gateway, gateway_pid),
            _maybe_litellm(python, upstream, root) as litellm,
        ):
            targets: list[dict[str, Any]] = [
                {
                    "name": "direct",
                    "url": upstream.rstrip("/"),
                    "pid": upstream_pid,
                    "model": fake_openai.MODEL,
                    "headers": {},
                },
                {
                    "name": "holon",
                    "url": gateway,
                    "pid": gateway_pid,
                    "model": CAPABILITY,
                    "headers": {"Authorization": f"Bearer {token}"},
                },
            ]
            if litellm is not None:
                targets.append(
                    {
                        "name": "litellm",
                        "url": litellm[0],
                        "pid": litellm[1],
                        "model": LITELLM_MODEL,
                        "headers": {"Authorization": f"Bearer {MASTER_KEY}"},
                    }
                )
            results = asyncio.run(measure(targets, args.calls, args.rounds, levels))
            through = targets[1]["through"]
        results["ledger"] = check_ledger(url, key, through)
    results["versions"] = {"litellm": None if python is None else LITELLM_VERSION}
    results["cpu_note"] = "`direct`'s CPU is the upstream's own; the others' their gateway's"
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        report(results)
    return 0 if results["ledger"]["consistent"] else 1


@contextmanager
def _maybe_litellm(
    python: Path | None, upstream: str, root: Path
) -> Iterator[tuple[str, int] | None]:
    if python is None:
        yield None
        return
    with litellm_server(python, upstream, root) as found:
        yield found


if __name__ == "__main__":
    sys.exit(main())
