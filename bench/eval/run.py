"""`holon eval` end to end (plan + execute + grade + persist), in cells per second.

A suite built in a temp dir (default 500 public + 500 holdout cases from a
stored file, × 2 repetitions = 2,000 cells; five suite checks plus the output
schema check on every case) is installed in a fresh store per scenario; a
bench agent (bench_agent.py, bare ASGI, fixed answer) is registered; then
`make_plan`, `start` (the cells are created) and `work` (claim, execute,
grade, group commits, finish with scores and the record) run, timed by phase.

Scenarios:

- zero-latency agent, in-process (`asgi:`) and over loopback HTTP (uvicorn in
  a subprocess), at concurrency 16 (the default) and 64. Baseline, same run:
  the executor alone making the same number of calls at the same concurrency
  (no store, no grading); the ratio says what the runner costs on top.
- 20 ms agent at concurrency 64 (the goal) and 16, in-process and over
  loopback. Baseline: the ideal, cells / concurrency × 20 ms. At 64 the
  ideal (0.625 s for 2,000 cells) leaves 0.3 ms of CPU a cell, so the ratio
  measures the runner's CPU cost; at 16 (2.5 s) it shows whether the runner
  keeps every slot busy when CPU is not the limit.
- the same two at concurrency 64 split over 2 processes (`-c64-2proc`): the
  eval's own and one `holon worker` loop (`run_worker`, started before the
  clock, as a long-running worker would be), each at concurrency 32: what a
  second process buys when the cores are free (`--workers 0` skips them).
- the same two as `holon eval --processes N` runs them (`-c64-pN`, N from
  `--processes`, default 2): `work(..., processes=N)` forks N-1 children once
  the cells exist, inside the clock (the fork is part of the cost), and the
  concurrency of 64 is shared among them. Ratios to the ideal and to the
  one-process scenario of the same run (`ratio_to_one_process`), CPU per cell
  counting the children's CPU (`--processes 0` skips them).

Every figure also comes as CPU milliseconds per cell (this process, every
thread): the runner is CPU-bound in one process, and CPU time is steadier
than wall time on a shared machine.

Goals (reported, never asserted): >= 800 cells/s end to end on SQLite with
the zero-latency agent; the 20 ms agent within 1.5x of the ideal at
concurrency 64 (issue 20) and 1.3x at 16.

    .venv/bin/python bench/eval/run.py [--json] [--cases 1000] [--repetitions 2]
        [--postgres ADMIN_URL] [--profile {asgi,loopback}] [--only NAME] [--workers 1]
        [--processes 2]

`--postgres` takes an admin URL; each scenario then also runs on a fresh
database created there and dropped afterwards. `--profile` runs the
zero-latency scenario (concurrency 64, SQLite) under cProfile, every thread
included, and prints where the time went.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

import bench_agent  # noqa: E402

from agents import CallLimits, Executor, manifest_from_dict  # noqa: E402
from bench._args import bench_parser  # noqa: E402
from bench._support import (  # noqa: E402
    postgres_url,
    profile_every_thread,
    sqlite_url,
    uvicorn_app,
)
from evals import make_plan, start, work  # noqa: E402
from evals.suites import install_suite  # noqa: E402
from records import new_key, open_store  # noqa: E402

CAPABILITY = "ticket.classify"
LABELS = ["billing", "bug", "account", "outage"]

SUITE_YAML = """\
schema_version: 1
id: bench-tickets
version: 1
capability: ticket.classify
title: Bench tickets
input_schema: {$ref: schemas/input.json}
output_schema: {$ref: schemas/output.json}
limits: {max_cost_usd: "0.01", timeout_s: 10}
repetitions: REPETITIONS
threshold: 0.5
checks:
  - {name: label, path: $.output.label, equals: {path: $.expected.label}}
  - {name: priority, path: $.output.priority, equals: {path: $.expected.priority}}
  - {name: product, path: $.output.product, one_of: [books, payroll, shop, pos, api, general]}
  - {name: confidence, path: $.output.confidence, between: [0, 1]}
  - {name: label shape, path: $.output.label, full_match: "[a-z_]+"}
public: {file: cases/public.jsonl}
holdout: {file: cases/holdout.jsonl}
"""
INPUT_SCHEMA = {
    "type": "object",
    "required": ["subject", "body"],
    "properties": {"subject": {"type": "string"}, "body": {"type": "string"}},
}
OUTPUT_SCHEMA = {
    "type": "object",
    "required": ["label", "priority", "product"],
    "properties": {
        "label": {"type": "string"},
        "priority": {"enum": ["low", "normal", "high", "urgent"]},
        "product": {"type": "string"},
        "confidence": {"type": "number"},
    },
}


def make_suite(root: Path, cases: int, repetitions: int) -> Path:
    """`cases` cases, half public and half holdout; the agent passes a quarter of them."""
    directory = root / "bench-suite"
    (directory / "schemas").mkdir(parents=True)
    (directory / "cases").mkdir()
    yaml = SUITE_YAML.replace("REPETITIONS", str(repetitions))
    (directory / "suite.yaml").write_text(yaml)
    (directory / "schemas" / "input.json").write_text(json.dumps(INPUT_SCHEMA))
    (directory / "schemas" / "output.json").write_text(json.dumps(OUTPUT_SCHEMA))
    half = cases // 2
    for split, first, count in (("public", 0, half), ("holdout", half, cases - half)):
        lines = []
        for i in range(first, first + count):
            ticket = {
                "subject": f"Ticket {i}: invoice INV-{i} charged twice",
                "body": f"Hello, our card was charged twice for invoice INV-{i}. "
                "Please refund one of the payments. Thanks, Dana " * 3,
            }
            expected = {"label": LABELS[i % 4], "priority": "normal", "product": "general"}
            case = {"id": f"{split}-{i}", "input": ticket, "expected": expected, "tags": []}
            lines.append(json.dumps(case))
        (directory / "cases" / f"{split}.jsonl").write_text("\n".join(lines) + "\n")
    return directory


def manifest(endpoint: str) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "id": bench_agent.AGENT_ID,
        "version": bench_agent.VERSION,
        "protocol": "holon-http" if endpoint.startswith("http") else "asgi",
        "endpoint": endpoint,
        "capabilities": [CAPABILITY],
        "limits": {"max_cost_usd": "0.01", "timeout_s": 10},
        "pricing": {"per_call_usd": "0.0002", "per_1k_input_tokens_usd": "0.0001"},
    }


# -- stores and servers --------------------------------------------------------


@contextmanager
def agent_server(attribute: str) -> Iterator[str]:
    """bench_agent.<attribute> under uvicorn in a subprocess; yields its URL."""
    with uvicorn_app(f"bench_agent:{attribute}", HERE, "the bench agent") as url:
        yield url


# -- one eval ------------------------------------------------------------------


def run_eval(
    store_url: str,
    suite: Path,
    endpoint: str,
    concurrency: int,
    home: Path,
    workers: int = 0,
    processes: int = 1,
) -> dict[str, Any]:
    """Install, register, then plan + start + work (which finishes); seconds by phase.

    `workers` helper processes (`holon worker`'s loop, `run_worker`) are started
    before the clock starts, as long-running workers would be, and pick the
    eval up as soon as it is created; this process works it too. `processes` > 1
    is `holon eval --processes`: children forked by `work`, their CPU counted
    once reaped.
    """
    key = new_key()
    store = open_store(store_url, secret_key=key, auto_upgrade=True)
    helpers: list[subprocess.Popen[bytes]] = []
    try:
        install_suite(store, suite)
        store.agents.register(manifest(endpoint))
        helpers = [start_worker(store_url, key, home) for _ in range(workers)]
        for helper in helpers:
            wait_ready(helper)
        began, cpu_began = time.perf_counter(), cpu_time()
        plan = make_plan(store, bench_agent.AGENT_ID, home=home, concurrency=concurrency)
        planned = time.perf_counter()
        info = start(store, plan)
        created, cpu_created = time.perf_counter(), cpu_time()
        info = work(store, plan, info, home=home, processes=processes)
        done, cpu_done = time.perf_counter(), cpu_time()
        assert info.status == "done" and info.result is not None, info
        summary = info.result["summary"]
        if summary["outcomes"] != {"ok": plan.cells_total}:
            raise RuntimeError(f"bench cells did not all succeed: {summary['outcomes']}")
        recorders = Counter(c.recorded_by for c in store.evals.cells(info.id))
        return {
            "processes": max(processes, 1 + workers),
            "cells_by_process": sorted(recorders.values(), reverse=True),
            "cells": plan.cells_total,
            "passed": summary["passed"],
            "seconds": round(done - began, 3),
            "cells_per_s": round(plan.cells_total / (done - began), 1),
            # This process's CPU time (every thread, and forked children reaped
            # meanwhile): steadier than wall time on a shared machine, and what
            # bounds the runner (one event loop, one GIL).
            "cpu_s": round(cpu_done - cpu_began, 3),
            "cpu_ms_per_cell": round((cpu_done - cpu_began) * 1000 / plan.cells_total, 3),
            "work_cpu_ms_per_cell": round((cpu_done - cpu_created) * 1000 / plan.cells_total, 3),
            "phases_s": {
                "plan": round(planned - began, 3),
                "create_cells": round(created - planned, 3),
                "work_and_finish": round(done - created, 3),
            },
        }
    finally:
        for helper in helpers:
            helper.terminate()
        for helper in helpers:
            helper.wait(30)
        store.close()


def cpu_time() -> float:
    """This process's CPU seconds plus those of its children reaped so far (the
    eval's forked processes; helper workers and agent servers are reaped later)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def start_worker(store_url: str, key: bytes, home: Path) -> subprocess.Popen[bytes]:
    """`python run.py --worker URL`: one `holon worker` loop on the store, polling fast."""
    env = {**os.environ, "HOLON_BENCH_KEY": key.decode()}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", store_url, str(home)]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE)


def wait_ready(helper: subprocess.Popen[bytes]) -> None:
    assert helper.stdout is not None
    if helper.stdout.readline().strip() != b"ready":
        raise RuntimeError("a bench worker did not start")


def worker_main(store_url: str, home: str) -> None:
    """The helper process: imports done and store open, it says `ready`, then works
    every running eval until SIGTERM."""
    from evals._worker import run_worker

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    store = open_store(store_url, secret_key=os.environ["HOLON_BENCH_KEY"])
    print("ready", flush=True)
    try:
        run_worker(store, home=Path(home), poll_s=0.01, stop=stop)
    finally:
        store.close()


def executor_baseline(endpoint: str, calls: int, concurrency: int) -> dict[str, float]:
    """The executor alone: `calls` calls at `concurrency`, no store, no grading."""
    agent = manifest_from_dict(manifest(endpoint), "bench")
    limits = CallLimits(max_cost_usd=Decimal("0.01"), timeout_s=10)
    ticket = {"subject": "Ticket 1: invoice INV-1 charged twice", "body": "Please refund. " * 8}

    async def go() -> tuple[float, float]:
        remaining = calls

        async def worker(executor: Executor) -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                outcome = await executor.execute(agent, CAPABILITY, ticket, limits)
                if not outcome.ok:
                    raise RuntimeError(f"bench call failed: {outcome}")

        async with Executor() as executor:
            await asyncio.gather(*(worker(executor) for _ in range(concurrency)))  # warm
            remaining = calls
            began, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(worker(executor) for _ in range(concurrency)))
            return time.perf_counter() - began, time.process_time() - cpu

    seconds, cpu_s = asyncio.run(go())
    return {
        "seconds": round(seconds, 3),
        "calls_per_s": round(calls / seconds, 1),
        "cpu_ms_per_call": round(cpu_s * 1000 / calls, 3),
    }


# -- scenarios -----------------------------------------------------------------


def _scenario(
    name: str, endpoint: str, concurrency: int, latency_s: float, **more: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "endpoint": endpoint,
        "concurrency": concurrency,
        "latency_s": latency_s,
        **more,
    }


def scenarios(
    asgi_zero: str,
    asgi_slow: str,
    http_zero: str,
    http_slow: str,
    workers: list[int],
    processes: list[int],
) -> list[dict[str, Any]]:
    out = []
    for transport, endpoint in (("asgi", asgi_zero), ("loopback", http_zero)):
        for concurrency in (16, 64):
            out.append(_scenario(f"zero-{transport}-c{concurrency}", endpoint, concurrency, 0.0))
    for transport, endpoint in (("asgi", asgi_slow), ("loopback", http_slow)):
        for concurrency in (64, 16):
            name = f"20ms-{transport}-c{concurrency}"
            out.append(_scenario(name, endpoint, concurrency, bench_agent.LATENCY_S))
    in_process = (("zero", 0.0, asgi_zero), ("20ms", bench_agent.LATENCY_S, asgi_slow))
    # The same eval split with `holon worker` processes, the concurrency of 64
    # shared among the processes (the plan's concurrency is per process): what
    # a second core buys.
    for extra in workers:
        for name, latency, endpoint in in_process:
            out.append(
                _scenario(f"{name}-asgi-c64-{extra + 1}proc", endpoint, 64, latency, workers=extra)
            )
    # `holon eval --processes N`: the eval's own process forks the others.
    for count in processes:
        for name, latency, endpoint in in_process:
            baseline = f"{name}-asgi-c64"
            out.append(
                _scenario(f"{baseline}-p{count}", endpoint, 64, latency, processes=count)
                | {"baseline": baseline}
            )
    return out


def measure(
    scenario: dict[str, Any], suite: Path, root: Path, backends: dict[str, Callable[[], Any]]
) -> dict[str, Any]:
    result: dict[str, Any] = {"concurrency": scenario["concurrency"]}
    cells = 0
    for backend, make_url_ in backends.items():
        with make_url_() as url:
            processes = 1 + scenario.get("workers", 0)
            numbers = run_eval(
                url,
                suite,
                scenario["endpoint"],
                scenario["concurrency"] // processes,
                root,
                workers=processes - 1,
                processes=scenario.get("processes", 1),
            )
        cells = numbers["cells"]
        if scenario["latency_s"]:
            ideal = cells / scenario["concurrency"] * scenario["latency_s"]
            numbers["ideal_s"] = round(ideal, 3)
            numbers["ratio_to_ideal"] = round(numbers["seconds"] / ideal, 2)
            numbers["work_ratio_to_ideal"] = round(
                numbers["phases_s"]["work_and_finish"] / ideal, 2
            )
        result[backend] = numbers
    if not scenario["latency_s"] and not scenario.get("workers") and "processes" not in scenario:
        baseline = executor_baseline(scenario["endpoint"], cells, scenario["concurrency"])
        result["executor_alone"] = baseline
        for backend in backends:
            result[backend]["ratio_to_executor"] = round(
                result[backend]["seconds"] / baseline["seconds"], 2
            )
    return result


def profile(suite: Path, root: Path, endpoint: str, top: int = 30) -> str:
    """cProfile of one zero-latency eval at concurrency 64 on SQLite, every thread included.

    The runner does its store work, fixture expansion and grading in
    `asyncio.to_thread` workers: each thread gets its own profiler (one
    profiler's call stack cannot follow several threads), merged at the end.
    For a sampling view of who holds the GIL: `py-spy record --gil -- python …`.
    """
    out = io.StringIO()
    with profile_every_thread(out) as merged, sqlite_url(root) as url:
        numbers = run_eval(url, suite, endpoint, 64, root)
    out.write(f"{numbers}\n(the profiler slows everything down several times)\n")
    stats = merged[0]
    # Idle waits (thread pools and the selector) lead by internal time; the
    # second listing keeps holon's own functions, by time including callees.
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(r"(evals|records|agents|schema)/", top)
    return out.getvalue()


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--cases", type=int, default=1000, help="cases (half public, half holdout)")
    parser.add_argument("--repetitions", type=int, default=2, help="repetitions per case")
    parser.add_argument("--postgres", metavar="ADMIN_URL", help="also run on PostgreSQL")
    parser.add_argument("--only", help="run only the scenarios whose name contains this")
    parser.add_argument(
        "--profile", choices=["asgi", "loopback"], help="profile one zero-latency eval instead"
    )
    parser.add_argument(
        "--workers",
        default="1",
        help="helper `holon worker` processes for the +Nw scenarios, comma-separated (0: none)",
    )
    parser.add_argument(
        "--processes",
        default="2",
        help="`holon eval --processes N` for the -pN scenarios, comma-separated (0: none)",
    )
    parser.add_argument("--worker", nargs=2, metavar=("URL", "HOME"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker_main(*args.worker)
        return
    workers = [int(n) for n in args.workers.split(",") if int(n) > 0]
    processes = [int(n) for n in args.processes.split(",") if int(n) > 1]
    with tempfile.TemporaryDirectory(prefix="holon-bench-eval-") as tmp:
        root = Path(tmp)
        os.environ.setdefault("HOLON_HOME", str(root / "home"))
        suite = make_suite(root, args.cases, args.repetitions)
        if args.profile == "asgi":
            print(profile(suite, root, "asgi:bench_agent:app"))
            return
        with agent_server("app") as http_zero, agent_server("slow_app") as http_slow:
            if args.profile == "loopback":
                print(profile(suite, root, http_zero))
                return
            backends: dict[str, Callable[[], Any]] = {"sqlite": lambda: sqlite_url(root)}
            if args.postgres:
                admin = args.postgres
                backends["postgresql"] = lambda: postgres_url(admin)
            results = {}
            for scenario in scenarios(
                "asgi:bench_agent:app",
                "asgi:bench_agent:slow_app",
                http_zero,
                http_slow,
                workers,
                processes,
            ):
                if args.only and args.only not in scenario["name"]:
                    continue
                results[scenario["name"]] = measure(scenario, suite, root, backends)
                against_one_process(results, scenario)
                if not args.json:
                    report(scenario["name"], results[scenario["name"]])
    results["goals"] = goals(results)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for goal, value in results["goals"].items():
        print(f"goal {goal}: {value}")


def against_one_process(results: dict[str, Any], scenario: dict[str, Any]) -> None:
    """A -pN scenario's seconds and CPU per cell over the one-process run's, same run."""
    base = results.get(scenario.get("baseline", ""))
    if base is None:
        return
    for backend, numbers in results[scenario["name"]].items():
        if not isinstance(numbers, dict) or backend not in base:
            continue
        numbers["ratio_to_one_process"] = round(numbers["seconds"] / base[backend]["seconds"], 2)
        numbers["cpu_ratio_to_one_process"] = round(
            numbers["cpu_ms_per_cell"] / base[backend]["cpu_ms_per_cell"], 2
        )


def goals(results: dict[str, Any]) -> dict[str, Any]:
    """The issue's goals, per SQLite scenario they apply to: met or not, with the figure."""
    out: dict[str, Any] = {}
    for name, result in results.items():
        numbers = result.get("sqlite")
        if numbers is None:
            continue
        if name.startswith("zero-"):
            out[f"{name} >= 800 cells/s"] = [numbers["cells_per_s"] >= 800, numbers["cells_per_s"]]
        elif "-c64" in name:
            ratio = numbers["ratio_to_ideal"]
            out[f"{name} <= 1.5x ideal"] = [ratio <= 1.5, ratio]
        elif "-c16" in name:
            ratio = numbers["ratio_to_ideal"]
            out[f"{name} <= 1.3x ideal"] = [ratio <= 1.3, ratio]
    return out


def report(name: str, result: dict[str, Any]) -> None:
    for backend in ("sqlite", "postgresql"):
        numbers = result.get(backend)
        if numbers is None:
            continue
        phases = numbers["phases_s"]
        line = (
            f"{name:>20} {backend:>10}: {numbers['cells']} cells in {numbers['seconds']:.2f} s "
            f"= {numbers['cells_per_s']:7.1f} cells/s  (plan {phases['plan']:.2f} s, "
            f"create {phases['create_cells']:.2f} s, "
            f"work+finish {phases['work_and_finish']:.2f} s); "
            f"CPU {numbers['cpu_ms_per_cell']:.2f} ms/cell (work+finish "
            f"{numbers['work_cpu_ms_per_cell']:.2f})"
        )
        if "ratio_to_ideal" in numbers:
            line += (
                f"  {numbers['ratio_to_ideal']}x ideal {numbers['ideal_s']:.3f} s "
                f"(work alone {numbers['work_ratio_to_ideal']}x)"
            )
        if "ratio_to_one_process" in numbers:
            line += (
                f"  {numbers['ratio_to_one_process']}x the one-process run "
                f"(CPU {numbers['cpu_ratio_to_one_process']}x)"
            )
        if "ratio_to_executor" in numbers:
            line += f"  {numbers['ratio_to_executor']}x the executor alone"
        print(line)
    if "executor_alone" in result:
        baseline = result["executor_alone"]
        print(
            f"{'':>20} {'executor':>10}: {baseline['calls_per_s']:7.1f} calls/s alone "
            f"({baseline['seconds']:.2f} s; CPU {baseline['cpu_ms_per_call']:.2f} ms/call)"
        )


if __name__ == "__main__":
    main()
