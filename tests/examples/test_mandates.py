"""The shipped example mandates are valid and say what their comments say."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from gateway.mandates import load_mandate

MANDATES = sorted((Path(__file__).resolve().parents[2] / "examples" / "mandates").glob("*.yaml"))


def test_there_are_examples() -> None:
    assert len(MANDATES) >= 2


@pytest.mark.parametrize("path", MANDATES, ids=lambda p: p.name)
def test_each_example_mandate_loads(path: Path) -> None:
    mandate = load_mandate(path)
    assert mandate.id == path.stem
    assert mandate.max_cost_per_call_usd > 0


def test_the_finance_mandate() -> None:
    mandate = load_mandate(MANDATES[0])
    assert mandate.id == "finance-invoices" and mandate.needs_record
    assert mandate.budget is not None and mandate.budget.amount_usd == Decimal(100)
    assert mandate.allows_agent("acme/invoice-reader") and not mandate.allows_agent("shady/x")
