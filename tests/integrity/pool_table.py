"""The pool size table of docs/integrity.md ("Instance sets that end"): the pool a subset
size needs for a month, a quarter and a year of weekly epochs, and the lower bound each
subset size gives an agent right on 0.8 of it, from the product's own `lower_bound`.

`.venv/bin/python -m tests.integrity.pool_table` prints it; `test_pool_table.py` holds
the page to it.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from evals._evidence import lower_bound
from evals.suites._cases import MAX_CASES
from evals.suites._model import DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET

SUBSETS = (50, 100, 200)
EPOCHS = (4, 13, 52)  # about a week each: a month, a quarter, a year
RATE = Fraction(4, 5)


def _bound(subset: int, k: int) -> str:
    """The bound, and in brackets how far under the agent's rate it is (the width)."""
    bound = lower_bound(RATE * subset, subset, k)
    return f"{bound} (−{Decimal('0.8') - bound})"


def _pool(cases: int) -> str:
    """A pool's size, marked when one case file cannot hold it."""
    return str(cases) if cases <= MAX_CASES else f"{cases} (> {MAX_CASES})"


def table() -> str:
    """The Markdown table: per subset size, the pool each span needs, and the bound at k = 1
    and at k = every reveal the span allows (each epoch's instance set revealed up to
    `holdout_evals_per_instance_set` times: k counts every epoch's)."""
    per_epoch = DEFAULT_HOLDOUT_EVALS_PER_INSTANCE_SET
    head = (
        "| subset | pool for 4 epochs | 13 epochs | 52 epochs | bound at 0.8, k = 1 | "
        + " | ".join(f"k = {per_epoch * e} ({e} × {per_epoch})" for e in EPOCHS)
        + " |"
    )
    rows = [head, "|" + "---|" * (5 + len(EPOCHS))]
    for subset in SUBSETS:
        cells = [str(subset), *(_pool(subset * e) for e in EPOCHS), _bound(subset, 1)]
        cells += [_bound(subset, per_epoch * e) for e in EPOCHS]
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table())
