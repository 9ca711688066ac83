"""The policies that judged a report, stated in the report (docs/evals.md, "Reports").

A report's verdicts mean something only under their rules: the suites'
thresholds, the overfit rule and its alpha, the lower-bound gate a mandate may
apply to the record, and the gate `evals compare` holds a candidate to. Each is
read from where the code that applies it declares it, never restated here, so a
report cannot state a rule other than the one that ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from evals._evidence import ALPHA as LOWER_BOUND_ALPHA
from evals._evidence import LOWER_BOUND_RULE
from evals._overfit import ALPHA as OVERFIT_ALPHA
from evals._overfit import OVERFIT_RULE
from evals._scores import THRESHOLD_RULE
from evals._stats import rounded
from evals.reports._data import SuiteData
from evals.reports._gate import GATE_DROP, GATE_RULE

__all__ = ["policies_block", "policy_lines"]


def _number(value: Fraction) -> Any:
    return rounded(value).normalize()


def policies_block(suites: Sequence[SuiteData]) -> dict[str, Any]:
    """The report's `policies`: each rule with the numbers it applies, per suite where a
    suite sets its own (threshold, overfit delta)."""
    return {
        "thresholds": {
            "rule": THRESHOLD_RULE,
            "suites": [{"id": s.id, "threshold": str(s.threshold)} for s in suites],
        },
        "overfit": {
            "rule": OVERFIT_RULE,
            "alpha": _number(OVERFIT_ALPHA),
            "suites": [{"id": s.id, "delta": str(s.overfit_delta)} for s in suites],
        },
        "lower_bound": {"rule": LOWER_BOUND_RULE, "alpha": _number(LOWER_BOUND_ALPHA)},
        "compare_gate": {"rule": GATE_RULE, "drop": _number(GATE_DROP)},
    }


def policy_lines(policies: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(policy, statement) pairs for the text formats, from the report's own block."""
    if not policies:
        return []
    thresholds = policies["thresholds"]
    overfit = policies["overfit"]
    per_suite = ", ".join(f"{s['id']} {s['threshold']}" for s in thresholds["suites"])
    deltas = ", ".join(f"{s['id']} {s['delta']}" for s in overfit["suites"])
    return [
        ("thresholds", f"{per_suite or 'no suite'}: {thresholds['rule']}"),
        ("overfit", f"alpha {overfit['alpha']}; delta {deltas or 'none'}: {overfit['rule']}"),
        (
            "lower-bound gate",
            f"alpha {policies['lower_bound']['alpha']}: {policies['lower_bound']['rule']}",
        ),
        (
            "compare gate",
            f"drop {policies['compare_gate']['drop']}: {policies['compare_gate']['rule']}",
        ),
    ]
