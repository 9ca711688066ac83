"""A comparison read in one pass over each eval's cells (evals.reports.compare_evals) is,
byte for byte in every format and audience, the comparison made with every cell of both
evals in memory (`_compare_oracle`), on real and seeded-random evals in every pairing."""

from __future__ import annotations

import itertools
import weakref
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from evals.reports import _data as data_module
from evals.reports import compare_evals, render_comparison
from evals.reports._compare import compare_sources
from evals.reports._data import CellData, EvalData, EvalSource, load_eval, open_eval
from records import Store
from schema.errors import Refused
from tests.evals.reports._compare_oracle import compare_data
from tests.evals.reports._setup import as_valid
from tests.evals.reports._varied import varied_evals

AUDIENCES = ("author", "operator")
FORMS = ("json", "md", "html")
PAGE = 4  # fewer cells than some cases have: pages end inside cases


def _outcome(make: Callable[[], dict[str, Any]]) -> tuple[str, Any]:
    """Each format's text of a comparison, or the refusal's message and details."""
    try:
        comparison = make()
    except Refused as refused:
        return "refused", (str(refused), refused.hint, refused.details)
    as_valid("compare", comparison)
    return "compared", [render_comparison(comparison, form) for form in FORMS]


def _same(base: EvalData, candidate: EvalData, *, new: Callable[..., Any]) -> int:
    """How many comparisons of `base` and `candidate` were checked, every one the oracle's."""
    checked = 0
    for audience, allow in itertools.product(AUDIENCES, (False, True)):
        old = partial(compare_data, base, candidate, audience=audience, allow_mismatch=allow)
        made = partial(new, audience=audience, allow_mismatch=allow)
        assert _outcome(made) == _outcome(old), (base.info.id, candidate.info.id, audience)
        checked += 1
    return checked


@pytest.fixture
def evals(
    sqlite_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Store, list[str]]:
    monkeypatch.setattr(data_module, "PAGE_CELLS", PAGE)
    return sqlite_store, varied_evals(sqlite_store, tmp_path, seed=35)


def _compared_as_in_memory(store: Store, ids: list[str], pairs: list[tuple[str, str]]) -> None:
    data = {eval_id: load_eval(store, eval_id) for eval_id in ids}
    checked = 0
    for a, b in pairs:
        checked += _same(
            data[a],
            data[b],
            new=lambda **settings: compare_evals(store, a, b, **settings),  # noqa: B023
        )
    assert checked == len(pairs) * 4


def test_pairs_compare_as_with_every_cell_in_memory(evals: tuple[Store, list[str]]) -> None:
    """Each eval against itself and against the one three along (every kind meets
    another kind); every ordered pair is the slow tier's."""
    store, ids = evals
    pairs = [(a, a) for a in ids[:2]] + list(zip(ids, ids[3:] + ids[:3], strict=True))
    _compared_as_in_memory(store, ids, pairs)


@pytest.mark.slow
def test_every_pair_compares_as_with_every_cell_in_memory(evals: tuple[Store, list[str]]) -> None:
    store, ids = evals
    _compared_as_in_memory(store, ids, list(itertools.product(ids, repeat=2)))


def test_pairs_compare_the_same_on_each_backend(store: Store, tmp_path: Path) -> None:
    ids = varied_evals(store, tmp_path, seed=7)
    for a, b in ((ids[0], ids[1]), (ids[3], ids[5]), (ids[6], ids[4]), (ids[8], ids[9])):
        base, candidate = load_eval(store, a), load_eval(store, b)
        _same(base, candidate, new=partial(compare_evals, store, a, b))


def _interleaved(data: EvalData) -> EvalData:
    """The same cells, every case's first repetition first, then every second one …: no
    case's cells come together (a store written by hand)."""
    return replace(data, cells=tuple(sorted(data.cells, key=lambda c: (c.repetition, c.idx))))


def _reversed(data: EvalData) -> EvalData:
    """The same cells in reverse order: repetitions read backwards, idx descending."""
    return replace(data, cells=data.cells[::-1])


@pytest.mark.parametrize("reorder", [_interleaved, _reversed])
def test_cells_held_out_of_case_order_compare_the_same(
    evals: tuple[Store, list[str]], reorder: Callable[[EvalData], EvalData]
) -> None:
    store, ids = evals
    data = {eval_id: reorder(load_eval(store, eval_id)) for eval_id in ids}
    # Each eval as a base, against a candidate of another kind (every ordered pair is
    # the slow tier's, with the cells in order).
    for a, b in zip(ids, ids[3:] + ids[:3], strict=True):
        base, candidate = data[a], data[b]
        _same(
            base,
            candidate,
            new=lambda **settings: compare_sources(
                base.source(),  # noqa: B023
                candidate.source(),  # noqa: B023
                **settings,
            ),
        )


def test_a_comparison_holds_no_cell_it_has_counted(evals: tuple[Store, list[str]]) -> None:
    store, ids = evals
    read: list[weakref.ref[CellData]] = []  # every cell read, as long as it lives
    most = 0

    def watched(source: EvalSource) -> EvalSource:
        def cells(suite_id: str | None) -> Iterator[CellData]:
            nonlocal most
            for cell in source.read(suite_id):
                read.append(weakref.ref(cell))
                most = max(most, sum(1 for ref in read if ref() is not None))
                yield cell
                del cell

        return replace(source, read=cells)

    # Three repetitions each, the candidate left running with cells missing.
    base, candidate = ids[3], ids[5]
    for audience in AUDIENCES:
        compare_sources(
            watched(open_eval(store, base)),
            watched(open_eval(store, candidate)),
            audience=audience,
            allow_mismatch=True,
        )
    assert len(read) > 4 * 4 * PAGE
    assert 0 < most <= 2  # the cell being counted, and the one before it on its way out
