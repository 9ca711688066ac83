"""The pool size table of docs/integrity.md is what `tests.integrity.pool_table` computes
with the product's own lower bound."""

from __future__ import annotations

from pathlib import Path

from tests.integrity.pool_table import table

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrity.md"


def test_the_pages_pool_table_recomputes() -> None:
    # The page indents the table under its list item.
    page = "\n".join(line.strip() for line in PAGE.read_text(encoding="utf-8").splitlines())
    assert table() in page
