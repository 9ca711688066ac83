"""`holon evals import`: checking a report, as a ratio to rendering it.

A real eval of bench/eval's suite (default 1,000 cases × 2 repetitions =
2,000 cells) by the in-process bench agent, on a fresh SQLite store
(`bench._support.finished_eval`, as the console bench's); then, in
the same run, its operator report is rendered (`build_report` + `render_json`:
the baseline, what `holon evals report --format json --audience operator`
costs) and imported into the same store (`import_report`: read, schema,
counts, every derived number recomputed, cases checked and every cell graded
again against the installed suite, kept). Each is the best of `--runs`;
the phases of one import are timed apart.

    .venv/bin/python bench/eval/import_report.py [--json] [--cases 1000] [--repetitions 2]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))

from bench._args import bench_parser  # noqa: E402
from bench._support import finished_eval  # noqa: E402
from evals import import_report  # noqa: E402
from evals._import import _counts, _read, _recompute  # noqa: E402
from evals._import_suites import check_suite  # noqa: E402
from evals.reports import build_report, render_json  # noqa: E402


def best(runs: int, fn: Any) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return min(times)


def measure(cases: int, repetitions: int, runs: int) -> dict[str, Any]:
    with finished_eval(cases, repetitions) as done:
        store, home = done.store, done.home
        raw = render_json(build_report(store, done.eval_id, audience="operator")).encode()

        def render() -> None:
            render_json(build_report(store, done.eval_id, audience="operator"))

        def load() -> None:
            import_report(store, raw, home=home)

        rendered = best(runs, render)
        imported = best(runs, load)
        began = time.perf_counter()
        report = _read(raw, None)
        read = time.perf_counter()
        _counts(report, None)
        secret = store.suites.holdout_secret()
        _recompute(report, secret, None)
        recomputed = time.perf_counter()
        for i, suite in enumerate(report["suites"]):
            check_suite(store, home, i, suite, secret, None)
        checked = time.perf_counter()
    return {
        "cells": done.cells,
        "report_bytes": len(raw),
        "render_s": round(rendered, 3),
        "import_s": round(imported, 3),
        "ratio": round(imported / rendered, 2),
        "phases_s": {
            "read_and_schema": round(read - began, 3),
            "counts_and_recompute": round(recomputed - read, 3),
            "cases_and_grading_again": round(checked - recomputed, 3),
        },
    }


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    result = measure(args.cases, args.repetitions, args.runs)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    phases = result["phases_s"]
    print(
        f"{result['cells']} cells, a {result['report_bytes'] / 1e6:.1f} MB report: rendered in "
        f"{result['render_s']} s, imported in {result['import_s']} s ({result['ratio']}x); "
        f"read and schema {phases['read_and_schema']} s, counts and recompute "
        f"{phases['counts_and_recompute']} s, cases and grading again "
        f"{phases['cases_and_grading_again']} s"
    )


if __name__ == "__main__":
    main()
