"""The pool tables of docs/integrity.md: the pool sizes and bounds `tests.integrity.pool_table`
computes with the product's own lower bound, and the decoding `tests.integrity.pool_sim`
measures under the product's own budget and release rules."""

from __future__ import annotations

from pathlib import Path

from tests.integrity import pool_sim
from tests.integrity.pool_table import table

PAGE = Path(__file__).resolve().parents[2] / "docs" / "integrity.md"


def test_the_pages_pool_table_recomputes() -> None:
    assert table() in _page()  # the page indents its tables under a list item


def _page() -> str:
    return "\n".join(line.strip() for line in PAGE.read_text(encoding="utf-8").splitlines())


def test_the_pages_decoding_table_recomputes() -> None:
    assert pool_sim.table() in _page()


def test_disjoint_subsets_stop_what_resampling_lets_decoding_add_up() -> None:
    """Across epochs of one file: disjoint, the final is within +0.05 of the truth on
    average; resampled, it gains more with every epoch, past +0.10 by the thirteenth."""

    def mean(cut: pool_sim.Cut, epochs: int) -> float:
        runs = [
            pool_sim.final_inflation(cut, file=300, subset=150, epochs=epochs, seed=s)
            for s in range(16)
        ]
        return sum(runs) / len(runs)

    disjoint = mean("disjoint", 52)  # the file holds two epochs: the rest are public-only
    assert disjoint == mean("disjoint", 2) and disjoint < 0.05
    assert mean("resampled", 2) < mean("resampled", 13) and mean("resampled", 13) > 0.10
