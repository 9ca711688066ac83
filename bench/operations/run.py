"""The CLI's parser, built from the operation table, as a ratio to a baseline tree's.

`holon --help` builds the whole `holon` parser, and each command of the
operation table builds its own from the table, so what the table costs at
import (its dataclasses) is paid by every one of those commands.
Each round starts two fresh interpreters one after the other, this tree and the
baseline checkout (`--baseline DIR`, e.g. a `git worktree` of the commit before
the table), with the same Python, bytecode cached apart from both trees
(PYTHONPYCACHEPREFIX), and each reports the CPU and wall time of importing the
CLI's command modules and building the parser. Medians over the rounds.

    .venv/bin/python bench/operations/run.py --baseline ../main [--rounds 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import time
c, w = time.process_time(), time.perf_counter()
import gateway.cli._app as app
import gateway.cli._commands
parser = app.build_parser()
print((time.process_time() - c) * 1000, (time.perf_counter() - w) * 1000)
"""


def _once(tree: Path, cache: str) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONPYCACHEPREFIX": cache}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=tree, capture_output=True, text=True, check=True
    )
    cpu, wall = done.stdout.split()
    return float(cpu), float(wall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="a checkout to compare with")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sides = {"table": ROOT, "baseline": args.baseline.resolve()}
    with tempfile.TemporaryDirectory() as tmp:
        caches = {name: str(Path(tmp) / name) for name in sides}
        for name, tree in sides.items():  # warm-up: writes each side's bytecode
            _once(tree, caches[name])
        seen: dict[str, list[tuple[float, float]]] = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, tree in sides.items():
                seen[name].append(_once(tree, caches[name]))
    result = {
        name: {
            "cpu_ms": statistics.median(c for c, _ in runs),
            "wall_ms": statistics.median(w for _, w in runs),
            "cpu_min_ms": min(c for c, _ in runs),
        }
        for name, runs in seen.items()
    }
    ratio = result["table"]["cpu_ms"] / result["baseline"]["cpu_ms"]
    if args.json:
        print(json.dumps({**result, "cpu_ratio": ratio, "rounds": args.rounds}))
        return
    for name, row in result.items():
        print(
            f"{name:9} CPU {row['cpu_ms']:6.1f} ms (min {row['cpu_min_ms']:.1f}), "
            f"wall {row['wall_ms']:6.1f} ms"
        )
    print(f"ratio (CPU, median): {ratio:.3f}")


if __name__ == "__main__":
    main()
