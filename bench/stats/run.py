"""The overfit rule's one-sided Fisher p as tables grow: the exact reference against the
certified interval (evals/_fisher.py), CPU time by table size.

For each size (default 1,000 / 10,000 / 100,000 / 1,000,000 cells), two groups of half
the cells each, at four positions of the table: `mode` (both groups at half: p near
0.5), `3sd` (3 standard deviations of the group-1 count above the mode: p near 1e-3),
`tail` (90% against 60%: p from 1e-29 at 1,000 cells to 1e-27489 at 10^6) and `far`
(all against none: p = 1/C(N, N/2)). Per table: `old`, the exact Fraction
(`fisher_one_sided`, only up to `--old-max` cells: it takes seconds at 100,000 and
minutes beyond); `new`, the interval (`fisher_tail`); `decided`, the interval and what
the overfit rule reads from it (its 4 significant digits, the side of ALPHA, and both
for a Holm factor of 3), `exact` whether that needed the exact p. CPU time
(`time.process_time`), the best of the rounds that fit in `--seconds` (at least one).

Ratios between consecutive sizes say how each grows: 10x the cells is 10x the time for
a linear algorithm (the new one's walk from the mode to x1), about 3.2x for one of
standard deviations (its sums near the mode), more for the old one.

    .venv/bin/python bench/stats/run.py [--json] [--sizes 1000,10000,100000,1000000]
        [--old-max 100000] [--seconds 0.5]
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench._args import bench_parser
from evals._fisher import fisher_one_sided, fisher_tail
from evals._overfit import ALPHA

Table = tuple[int, int, int, int]


def tables(cells: int) -> dict[str, Table]:
    """The four positions of a table of `cells` cells, two groups of half each."""
    half = cells // 2
    sd = math.sqrt(cells) / 4  # of the group-1 count with half the cells successes
    up = round(3 * sd)
    return {
        "mode": (half // 2, half, half // 2, half),
        "3sd": (half // 2 + up, half, half // 2 - up, half),
        "tail": (half * 9 // 10, half, half * 6 // 10, half),
        "far": (half, half, 0, half),
    }


def best_cpu(run: Callable[[], object], seconds: float) -> float:
    """The least CPU time of one `run()` over the rounds that fit in `seconds` (>= 1)."""
    best, spent = math.inf, 0.0
    while spent < seconds or best == math.inf:
        started = time.process_time()
        run()
        took = time.process_time() - started
        best, spent = min(best, took), spent + took
    return best


def decided(table: Table) -> bool:
    """What the overfit rule reads of one p; whether it needed the exact p."""
    p = fisher_tail(*table)
    p.significant()
    p.below(ALPHA)
    holm = p.scaled(3)
    holm.significant()
    holm.below(ALPHA)
    return p.computed or holm.computed


def measure(cells: int, old_max: int, seconds: float) -> list[dict[str, Any]]:
    rows = []
    for position, table in tables(cells).items():
        row: dict[str, Any] = {"cells": cells, "position": position, "table": table}
        if cells <= old_max:
            row["old_ms"] = round(best_cpu(partial(fisher_one_sided, *table), seconds) * 1e3, 4)
        row["new_ms"] = round(best_cpu(partial(fisher_tail, *table), seconds) * 1e3, 4)
        row["decided_ms"] = round(best_cpu(partial(decided, table), seconds) * 1e3, 4)
        row["exact"] = decided(table)
        row["p"] = str(fisher_tail(*table).significant())
        rows.append(row)
    return rows


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument(
        "--sizes", default="1000,10000,100000,1000000", help="cells, comma-separated"
    )
    parser.add_argument("--old-max", type=int, default=100_000, help="largest table timed exactly")
    parser.add_argument("--seconds", type=float, default=0.5, help="CPU time per measure")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = [row for size in sizes for row in measure(size, args.old_max, args.seconds)]
    by = {(row["cells"], row["position"]): row for row in rows}
    ratios: dict[str, dict[str, float]] = {}
    for small, large in zip(sizes, sizes[1:], strict=False):
        for position in tables(small):
            a, b = by[small, position], by[large, position]
            ratios[f"{position} {large}/{small}"] = {
                key: round(b[key] / a[key], 1) for key in ("old_ms", "new_ms") if key in b
            }
    result = {"rows": rows, "ratios": ratios}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    for row in rows:
        old = f"{row['old_ms']:>10.3f}" if "old_ms" in row else f"{'-':>10}"
        print(
            f"{row['cells']:>9} {row['position']:>4}: old {old} ms, new {row['new_ms']:>8.3f} ms, "
            f"decided {row['decided_ms']:>8.3f} ms{' (exact p)' * row['exact']}, p {row['p']}"
        )
    for name, ratio in ratios.items():
        print(f"{name}: " + ", ".join(f"{key[:-3]} x{value}" for key, value in ratio.items()))


if __name__ == "__main__":
    main()
