"""`holon evals report` and `holon evals compare` as cells grow: peak memory and CPU of one
report, and of one comparison of two evals, by eval size.

For each size (default 1,000 / 10,000 / 100,000 cells), a fresh SQLite store
under a temp HOLON_HOME gets bench/eval's suite (cells / `--repetitions`
cases, half public and half holdout) and two done evals of it whose cells are
recorded straight through the records API (claim, record, finish: no agent
called): each cell a copy of one that a real eval of the same suite by the
bench agent recorded (its outcome, output and six check results), its
latency varied; in the second, every fourth case's cells copy other ones, so
that those cases pass and fail otherwise. Then, per format (default the
operator's JSON and JUnit), `holon evals report EVAL --format F --audience
operator -o /dev/null` runs on the first in a fresh process as its user runs
it (started by a small process of its own: `bench._support.peak_and_cpu`),
and so does
`holon evals compare A B --format json --audience operator -o /dev/null`
(format `compare`); their peak RSS (`ru_maxrss`) and CPU time (user + system)
are what is measured: memory is not distorted by a busy machine, and CPU
time less than wall time is.

Ratios between consecutive sizes say how each grows: 10x the cells in
bounded memory is a peak RSS ratio near 1, and CPU near 10x.

    .venv/bin/python bench/reports/run.py [--json] [--sizes 1000,10000,100000]
        [--repetitions 20] [--formats json,junit,compare]
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

from bench._args import bench_parser  # noqa: E402
from bench._support import finished_eval, peak_and_cpu  # noqa: E402

if TYPE_CHECKING:
    from records import Store

CLAIM = 5_000  # cells claimed and recorded at a time
COMPARE = "compare"  # the format that measures `holon evals compare` instead


def _templates() -> dict[str, list[tuple[Any, ...]]]:
    """What a real eval of the bench suite recorded, per split: each cell's result columns."""
    with finished_eval(cases=20, repetitions=1) as done:
        rows = done.store.evals.cells(done.eval_id)
    templates: dict[str, list[tuple[Any, ...]]] = {"public": [], "holdout": []}
    for row in rows:
        templates[row.split].append(
            (row.outcome_code, row.passed, row.cost_usd, row.latency_ms, row.attempts)
            + (row.outcome, row.output, row.checks)
        )
    return templates


def make_store(
    home: Path, cells: int, repetitions: int, templates: dict[str, Any], evals: int = 2
) -> list[str]:
    """A store under `home` holding `evals` done evals of `cells` cells each; their ids."""
    sys.path.insert(0, str(ROOT / "bench" / "eval"))
    from memory import make_home

    store = make_home(home, cells // repetitions, repetitions)
    try:
        return [_recorded(store, home, n, repetitions, templates) for n in range(evals)]
    finally:
        store.close()


def _recorded(store: Store, home: Path, n: int, repetitions: int, templates: dict[str, Any]) -> str:
    """A done eval of the store's suite, each cell a copy of the template of its idx; in
    every eval but the first (`n` 0), every fourth case's cells copy every other template
    instead, so that those cases pass and fail otherwise. Its id."""
    import bench_agent

    from evals import make_plan, start
    from records import CellResultRow

    info = start(store, make_plan(store, bench_agent.AGENT_ID, home=home))
    while True:
        claimed = store.evals.claim(info.id, "bench:1:reports", CLAIM, 3600)
        if not claimed:
            break
        rows = []
        for cell in claimed:
            split = "public" if cell.split == "public" else "holdout"
            changed = n and (cell.idx // repetitions) % 4 == 0
            code, passed, cost, latency, attempts, outcome, output, checks = templates[split][
                cell.idx * (2 if changed else 1) % len(templates[split])
            ]
            rows.append(
                CellResultRow(
                    cell.idx,
                    cell.fence,
                    code,
                    passed,
                    cost,
                    latency + (cell.idx % 997) / 100,  # a spread for the percentiles
                    attempts,
                    outcome,
                    output,
                    checks,
                )
            )
        store.evals.record(info.id, rows)
    store.evals.finish(info.id, result={}, record=None)
    return info.id


def measure(home: Path, eval_ids: list[str], form: str) -> dict[str, Any]:
    """One `holon evals report` of the first eval, or (`compare`) one `holon evals compare`
    of the first against the second, in a fresh process: its peak RSS and CPU."""
    command = [sys.executable, "-m", "gateway.cli", "evals"]
    if form == COMPARE:
        # Exit 1: the gate failed, as it may when cases changed.
        command += ["compare", *eval_ids[:2], "--format", "json"]
    else:
        command += ["report", eval_ids[0], "--format", form]
    command += ["--audience", "operator", "-o", os.devnull]
    env = dict(os.environ, HOLON_HOME=str(home), NO_COLOR="1")
    env.pop("HOLON_DATABASE_URL", None)
    env.pop("HOLON_GATEWAY_URL", None)
    return peak_and_cpu(command, env=env, cwd=ROOT, ok=(0, 1) if form == COMPARE else (0,))


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000", help="cells, comma-separated")
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--formats", default=f"json,junit,{COMPARE}")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    forms = args.formats.split(",")
    templates = _templates()
    result: dict[str, Any] = {"sizes": sizes, "repetitions": args.repetitions, "runs": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            home = Path(tmp) / f"home-{size}"
            eval_ids = make_store(home, size, args.repetitions, templates)
            result["runs"][str(size)] = {form: measure(home, eval_ids, form) for form in forms}
    ratios: dict[str, Any] = {}
    for small, large in zip(sizes, sizes[1:], strict=False):
        for form in forms:
            a, b = result["runs"][str(small)][form], result["runs"][str(large)][form]
            ratios[f"{form} {large}/{small}"] = {
                "peak_rss": round(b["peak_rss_mb"] / a["peak_rss_mb"], 2),
                "cpu": round(b["cpu_s"] / a["cpu_s"], 2) if a["cpu_s"] else None,
            }
    result["ratios"] = ratios
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for size in sizes:
        for form in forms:
            run = result["runs"][str(size)][form]
            print(
                f"{size:>8} cells {form:>7}: {run['peak_rss_mb']:>8} MB peak, {run['cpu_s']} s CPU"
            )
    for name, ratio in ratios.items():
        print(f"{name}: peak RSS x{ratio['peak_rss']}, CPU x{ratio['cpu']}")


if __name__ == "__main__":
    main()
