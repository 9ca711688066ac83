"""Print the simulation's figures for docs/integrity.md.

.venv/bin/python -m tests.integrity.report
"""

from __future__ import annotations

import sys
from decimal import Decimal
from statistics import mean

from tests.integrity.sim import STRATEGIES, attack, false_overfit_rate

SEEDS = range(16)


def main() -> None:
    out = sys.stdout.write
    out("| holdout | attack | budget | revealing evals | mean best record - truth | worst |\n")
    out("|---|---|---|---|---|---|\n")
    for kind in ("fixed", "generated"):
        for strategy in STRATEGIES:
            for limit in (1000, 3):
                runs = [
                    attack(
                        strategy,  # type: ignore[arg-type]
                        kind=kind,
                        submissions=200,
                        limit=limit,
                        instance_limit=limit,
                        seed=s,
                    )
                    for s in SEEDS
                ]
                budget = "none" if limit == 1000 else str(limit)
                out(
                    f"| {kind} | {strategy} | {budget} | {runs[0].revealed} | "
                    f"{mean(r.inflation for r in runs):+.3f} | "
                    f"{max(r.inflation for r in runs):+.3f} |\n"
                )
    out("\nEleven orgs, the final from a fresh one (fixed holdout):\n\n")
    out("| counting | attack | revealing evals | final's k | mean final - truth | worst | ")
    out("admitted at truth + 0.01 |\n|---|---|---|---|---|---|---|\n")
    for counting in ("holdout", "org"):
        for strategy in STRATEGIES:
            runs = [
                attack(strategy, kind="fixed", orgs=11, counting=counting, seed=s)  # type: ignore[arg-type]
                for s in SEEDS
            ]
            finals = [r.final_inflation or 0.0 for r in runs]
            admitted = sum(r.gate_admits(Decimal(str(round(r.truth + 0.01, 2)))) for r in runs)
            out(
                f"| {counting} | {strategy} | {runs[0].revealed} | {runs[0].k(10)} | "
                f"{mean(finals):+.3f} | {max(finals):+.3f} | {admitted} of {len(runs)} |\n"
            )
    out("\nWith new instances every 3 submissions (67 epochs over 200 submissions):\n\n")
    out("| attack | mean best record - truth | best lower bound (k = 200) | admitted at ")
    out("truth + 0.01 |\n")
    out("|---|---|---|---|\n")
    for strategy in STRATEGIES:
        runs = [
            attack(strategy, kind="generated", submissions=200, epochs=67, seed=s)  # type: ignore[arg-type]
            for s in SEEDS
        ]
        admitted = sum(r.gate_admits(Decimal(str(round(r.truth + 0.01, 2)))) for r in runs)
        out(
            f"| {strategy} | {mean(r.inflation for r in runs):+.3f} | "
            f"{max(r.best_lower() for r in runs)} | {admitted} of {len(runs)} |\n"
        )
    out("\nFalse overfit warnings of honest agents (400 trials each):\n\n")
    for public_n, holdout_n, reps in ((36, 60, 1), (50, 60, 3), (30, 30, 5)):
        rate = false_overfit_rate(
            trials=400, public_n=public_n, holdout_n=holdout_n, repetitions=reps, seed=11
        )
        out(f"- public {public_n}, holdout {holdout_n}, {reps} repetitions: {float(rate):.2%}\n")


if __name__ == "__main__":
    main()
