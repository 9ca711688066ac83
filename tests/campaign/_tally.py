"""Counts of the bad-input campaign: how many inputs each campaign tried, and what became of them.

Every fuzzed or injected input is recorded with its outcome (`loaded`, the
error code of a clear error, ...). The totals are printed at the end of the
run (tests/_campaign_totals.py), and docs/reliability.md quotes them.
"""

from __future__ import annotations

from collections import Counter, defaultdict

TALLY: defaultdict[str, Counter[str]] = defaultdict(Counter)


def record(campaign: str, outcome: str) -> None:
    TALLY[campaign][outcome] += 1


def lines() -> list[str]:
    out = []
    for campaign in sorted(TALLY):
        counts = TALLY[campaign]
        total = sum(counts.values())
        parts = ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))
        out.append(f"{campaign}: {total} inputs ({parts})")
    return out
