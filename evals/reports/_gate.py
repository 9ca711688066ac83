"""The compare gate (docs/evals.md, "Reports"): declared once, applied by `evals compare`
and stated by every report, so a report says what a comparison of it will hold it to.

A case tagged `critical` whose paired-run score dropped by at least `GATE_DROP`
fails the gate, whatever the totals: a mean that rose can hide a case that broke.
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["GATE_DROP", "GATE_RULE", "fails_gate"]

GATE_DROP = Fraction(1, 2)
GATE_RULE = (
    f"fails when any case tagged critical dropped by at least {float(GATE_DROP)} (paired runs)"
)


def fails_gate(critical: bool, drop: Fraction) -> bool:
    """Whether a case's change fails the gate: `drop` = base score - candidate score."""
    return critical and drop >= GATE_DROP
