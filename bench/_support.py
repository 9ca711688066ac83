"""What the benches share: loopback servers in subprocesses, throwaway stores, a
finished 2,000-cell eval, a cProfile that follows every thread, and the closed-loop
load client.

Each bench puts the repository root on `sys.path` and imports this as
`bench._support`.
"""

from __future__ import annotations

import asyncio
import cProfile
import json
import pstats
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

if TYPE_CHECKING:
    import aiohttp

__all__ = [
    "FinishedEval",
    "by_load",
    "closed_loop",
    "finished_eval",
    "free_port",
    "latency_rows",
    "postgres_url",
    "process",
    "profile_every_thread",
    "quantile",
    "sqlite_url",
    "suite_directory",
    "uvicorn_app",
]


async def closed_loop(
    session: aiohttp.ClientSession,
    url: str,
    data: bytes,
    headers: Mapping[str, str],
    calls: int,
    concurrency: int,
    refusal: Callable[[int, bytes], str | None],
) -> tuple[list[float], float]:
    """`calls` POSTs of `data` by `concurrency` closed-loop workers: each latency (ms),
    and the wall time (s).

    `refusal(status, body)` says what is wrong with an answer, None when nothing is.
    The run goes to its end before the first three are raised together, so one bad
    answer does not leave the other workers running behind the error.
    """
    remaining = calls
    latencies: list[float] = []
    failures: list[str] = []

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            started = time.perf_counter()
            async with session.post(url, data=data, headers=headers) as response:
                payload = await response.read()
                status = response.status
            latencies.append((time.perf_counter() - started) * 1000)
            wrong = refusal(status, payload)
            if wrong is not None and len(failures) < 3:
                failures.append(wrong)

    wall = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - wall
    if failures:
        raise RuntimeError(f"calls to {url} failed: {failures}")
    return latencies, wall


def quantile(values: list[float], q: float) -> float:
    """The `q` quantile of `values` (0.01 to 0.99, by hundredths)."""
    return statistics.quantiles(values, n=100)[int(q * 100) - 1]


def latency_rows(samples: Mapping[str, list[float]], baseline: str) -> dict[str, dict[str, Any]]:
    """Each way's latencies (ms) summed up: its calls, p50 and p95, and their ratio to and
    the milliseconds they add over the `baseline` way's, measured at the same load."""
    base50 = statistics.median(samples[baseline])
    base95 = quantile(samples[baseline], 0.95)
    rows = {}
    for way, values in samples.items():
        p50, p95 = statistics.median(values), quantile(values, 0.95)
        rows[way] = {
            "calls": len(values),
            "p50_ms": round(p50, 3),
            "p95_ms": round(p95, 3),
            "p50_ratio": round(p50 / base50, 3),
            "p95_ratio": round(p95 / base95, 3),
            "p50_added_ms": round(p50 - base50, 3),
            "p95_added_ms": round(p95 - base95, 3),
        }
    return rows


def by_load(results: Mapping[str, Any]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(concurrency, way, row) of each load of `results`: its keys `c1`, `c8`, … hold a
    load's rows by way (as `latency_rows` makes them); its other keys are not rows."""
    for level, rows in results.items():
        if level.startswith("c") and level[1:].isdigit():
            for way, row in rows.items():
                yield int(level[1:]), way, row


# Runs a command (its output discarded) and prints its peak RSS (KiB) and CPU seconds. A
# child's `ru_maxrss` counts the memory of the process it was forked from (Linux keeps it
# across exec), so the command is started by this small process, not by a bench, which
# holds far more. Its first argument: the exit codes that are no failure.
_TIMER = """
import json, resource, subprocess, sys
done = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
if str(done.returncode) not in sys.argv[1].split(","):
    sys.exit(f"failed ({done.returncode}): {done.stderr[-2000:]}")
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps([usage.ru_maxrss, usage.ru_utime + usage.ru_stime]))
"""


def peak_and_cpu(
    command: list[str], *, env: Mapping[str, str], cwd: Path, ok: tuple[int, ...] = (0,)
) -> dict[str, float]:
    """`command` in a fresh process: its peak RSS (MB) and CPU time (user + system, s)."""
    codes = ",".join(str(code) for code in ok)
    done = subprocess.run(
        [sys.executable, "-c", _TIMER, codes, *command],
        cwd=cwd,
        env=dict(env),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[2:4])}: {done.stderr[-2000:]}")
    peak_kib, cpu = json.loads(done.stdout)
    return {"peak_rss_mb": round(peak_kib / 1024, 1), "cpu_s": round(cpu, 3)}


def free_port() -> int:
    """A port of 127.0.0.1 nobody listens on right now (for a server process to take)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _wait_for_port(
    port: int, child: subprocess.Popen[bytes], what: str, start_s: float = 30
) -> None:
    deadline = time.monotonic() + start_s
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise RuntimeError(f"{what} exited with {child.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} did not start")


@contextmanager
def process(
    command: list[str],
    port: int,
    what: str,
    env: dict[str, str] | None = None,
    start_s: float = 30,
    stdout: IO[Any] | None = None,
) -> Iterator[int]:
    """`command` in a subprocess, once it listens on `port` (within `start_s`); its pid.
    Stopped with SIGINT, so uvicorn shuts down gracefully (the lifespan ends, a profile is
    written). `stdout`: where its standard output goes (this process's by default)."""
    child = subprocess.Popen(command, env=env, stdout=stdout)
    try:
        _wait_for_port(port, child, what, start_s)
        yield child.pid
    finally:
        child.send_signal(signal.SIGINT)
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(10)


@contextmanager
def uvicorn_app(app: str, app_dir: Path, what: str) -> Iterator[str]:
    """The ASGI app `module:attribute` (found in `app_dir`) under uvicorn; its URL."""
    port = free_port()
    command = [sys.executable, "-m", "uvicorn", app, "--app-dir", str(app_dir)]
    command += ["--port", str(port), "--log-level", "warning", "--no-access-log"]
    with process(command, port, what):
        yield f"http://127.0.0.1:{port}/"


def suite_directory(
    root: Path,
    suite_yaml: str,
    schemas: tuple[dict[str, Any], dict[str, Any]],
    cases: dict[str, list[dict[str, Any]]],
) -> Path:
    """A suite directory under `root`: `suite_yaml`, the input and output `schemas`, and
    each split's cases (a JSONL file by split name)."""
    directory = root / "suite"
    (directory / "schemas").mkdir(parents=True)
    (directory / "cases").mkdir()
    (directory / "suite.yaml").write_text(suite_yaml)
    for name, schema in zip(("input", "output"), schemas, strict=True):
        (directory / "schemas" / f"{name}.json").write_text(json.dumps(schema))
    for split, lines in cases.items():
        text = "".join(json.dumps(case) + "\n" for case in lines)
        (directory / "cases" / f"{split}.jsonl").write_text(text)
    return directory


@contextmanager
def sqlite_url(root: Path) -> Iterator[str]:
    yield f"sqlite:///{root / f'holon-{secrets.token_hex(4)}.db'}"


@contextmanager
def postgres_url(admin_url: str, prefix: str = "holon_bench_") -> Iterator[str]:
    """A throwaway PostgreSQL database (created, then dropped); its URL. The tests'
    `postgres_url` fixture is this too (tests/conftest.py)."""
    name = f"{prefix}{secrets.token_hex(6)}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(admin_url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@dataclass(frozen=True)
class FinishedEval:
    store: Any  # records.Store
    home: Path
    root: Path
    eval_id: str
    cells: int


@contextmanager
def finished_eval(
    cases: int = 1000, repetitions: int = 2, url: str | None = None
) -> Iterator[FinishedEval]:
    """A real, finished eval of bench/eval's suite (`cases` × `repetitions` cells; half
    the cases holdout) by its in-process bench agent (`bench/eval/bench_agent.py`), on a
    fresh SQLite store in a temp dir (or the empty database at `url`), closed and
    removed when the block ends."""
    import tempfile

    eval_dir = Path(__file__).resolve().parent / "eval"
    # First on the path: the agent's endpoint is asgi:bench_agent:app, and `run` is the
    # eval bench's (not the calling bench's own run.py, whose directory Python put first).
    sys.path.insert(0, str(eval_dir))
    import bench_agent
    import run as eval_bench

    from evals import make_plan, start, work
    from evals.suites import install_suite
    from records import new_key, open_store

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        home = root / "home"
        store = open_store(
            url or f"sqlite:///{root / 'holon.db'}", secret_key=new_key(), auto_upgrade=True
        )
        try:
            install_suite(store, eval_bench.make_suite(root, cases, repetitions))
            store.agents.register(eval_bench.manifest("asgi:bench_agent:app"))
            plan = make_plan(store, bench_agent.AGENT_ID, home=home, concurrency=64)
            info = work(store, plan, start(store, plan), home=home)
            yield FinishedEval(store, home, root, info.id, plan.cells_total)
        finally:
            store.close()


@contextmanager
def profile_every_thread(stream: IO[str] | None = None) -> Iterator[list[pstats.Stats]]:
    """cProfile of this thread and of every thread started inside the block (one
    profiler per thread: one profiler's call stack cannot follow several threads),
    merged into the one `pstats.Stats` (printing to `stream`) that the yielded list
    holds when the block ends."""
    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def per_thread(*_: Any) -> None:
        mine = cProfile.Profile()
        with lock:
            profiles.append(mine)
        mine.enable()

    merged: list[pstats.Stats] = []
    main_profile = cProfile.Profile()
    threading.setprofile(per_thread)
    main_profile.enable()
    try:
        yield merged
    finally:
        main_profile.disable()
        threading.setprofile(None)
        stats = pstats.Stats(main_profile, stream=stream)
        with lock:
            for thread_profile in profiles:
                stats.add(thread_profile)
        merged.append(stats)
