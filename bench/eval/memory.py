"""`holon eval` as cells grow: peak memory and CPU of one eval, by its number of cells.

For each repetition count (default 2 and 20), a fresh SQLite store under a temp
HOLON_HOME gets bench/eval's suite of `--cases` cases (half public, half holdout;
default 10,000, so 20,000 and 200,000 cells) and the bench agent in-process
(`asgi:bench_agent:app`); then `holon eval bench/agent --yes` runs in a fresh process
as its user runs it (plan, cells created, run, graded, finished with its record), and
its peak RSS (`ru_maxrss`) and CPU time (user + system) are measured, started by a
small process of its own (`bench._support.peak_and_cpu`: a child's `ru_maxrss`
counts the process it was forked from). Memory is not distorted by a busy machine.

Ratios to the smallest size say how each grows: bounded memory is a peak RSS ratio
near 1 whatever the cells, and CPU grows with them.

    .venv/bin/python bench/eval/memory.py [--json] [--cases 10000] [--repetitions 2,20]

(`--cases 1000 --repetitions 1,10,100`: 1,000, 10,000 and 100,000 cells.)
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import bench_agent  # noqa: E402
import run as eval_bench  # noqa: E402

from bench._args import bench_parser  # noqa: E402
from bench._support import peak_and_cpu  # noqa: E402

if TYPE_CHECKING:
    from records import Store


def make_home(home: Path, cases: int, repetitions: int) -> Store:
    """A store under `home` with the bench suite installed and the bench agent registered;
    open (the caller closes it)."""
    from evals.suites import install_suite
    from records import new_key, open_store

    home.mkdir(parents=True)
    (home / "secret.key").write_bytes(new_key())
    store = open_store(
        f"sqlite:///{home / 'holon.db'}",
        secret_key=(home / "secret.key").read_bytes(),
        auto_upgrade=True,
    )
    try:
        install_suite(store, eval_bench.make_suite(home / "src", cases, repetitions))
        store.agents.register(eval_bench.manifest("asgi:bench_agent:app"))
    except BaseException:
        store.close()
        raise
    return store


def measure(home: Path) -> dict[str, Any]:
    """One `holon eval` in a fresh process: its peak RSS and CPU (exit 1: a suite missed
    its threshold, as the bench agent's do)."""
    command = [sys.executable, "-m", "gateway.cli", "eval", bench_agent.AGENT_ID, "--yes"]
    env = dict(os.environ, HOLON_HOME=str(home), NO_COLOR="1", HOLON_EXAMPLES="off")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.pop("HOLON_DATABASE_URL", None)
    return peak_and_cpu(command, env=env, cwd=ROOT, ok=(0, 1))


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--cases", type=int, default=10_000, help="half public, half holdout")
    parser.add_argument("--repetitions", default="2,20", help="comma-separated")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, repetitions in enumerate(int(r) for r in args.repetitions.split(",")):
            home = Path(tmp) / f"home{i}"
            make_home(home, args.cases, repetitions).close()
            cells = args.cases * repetitions
            row: dict[str, Any] = {"cells": cells, **measure(home)}
            row["cpu_ms_per_cell"] = round(row["cpu_s"] * 1000 / cells, 3)
            if rows:
                first = rows[0]
                row["peak_rss_ratio"] = round(row["peak_rss_mb"] / first["peak_rss_mb"], 2)
                row["cpu_ratio"] = round(row["cpu_s"] / first["cpu_s"], 2)
            rows.append(row)
            if not args.json:
                print(json.dumps(row), flush=True)
    if args.json:
        print(json.dumps({"rows": rows}))


if __name__ == "__main__":
    main()
