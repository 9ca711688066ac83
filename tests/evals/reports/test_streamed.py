"""A report written a piece at a time (evals.reports.write_report): its cells counted in
one pass and read again a case at a time, never all held, and the same bytes as the
report made whole from the same cells held in memory, in every format and audience."""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from evals.reports import CHUNKS, RENDERERS, ReportCache, build_report, write_report
from evals.reports import _data as data_module
from evals.reports._data import CellData, EvalData, load_eval, open_eval
from evals.reports._model import check_audience, materialized, report_of
from evals.reports._tally import ReportTally
from records import Store
from tests.evals.reports._setup import run_eval, setup

AUDIENCES = ("author", "operator")
REPETITIONS = 5
PAGE = 3  # fewer cells than a case has: pages end inside cases


@pytest.fixture
def repeated(store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A done eval of the echo agent, each case run REPETITIONS times, read PAGE cells at a time."""
    monkeypatch.setattr(data_module, "PAGE_CELLS", PAGE)
    setup(store, tmp_path)
    return run_eval(store, tmp_path / "home", repetitions=REPETITIONS)


def _interleaved(data: EvalData) -> EvalData:
    """The same cells, every case's first repetition first, then every second one …: no
    case's cells come together, so the report groups them in memory (`ReportTally`'s
    way with a store written by hand), as reports were made before they were streamed."""
    return replace(data, cells=tuple(sorted(data.cells, key=lambda c: (c.repetition, c.idx))))


@pytest.mark.parametrize("audience", AUDIENCES)
@pytest.mark.parametrize("form", sorted(CHUNKS))
def test_a_streamed_report_is_the_report_made_whole_in_memory(
    store: Store, repeated: str, form: str, audience: str
) -> None:
    written: list[str] = []
    write_report(store, repeated, audience=audience, form=form, write=written.append)
    assert len(written) > 1  # pieces, not one text
    data = _interleaved(load_eval(store, repeated))
    grouped = ReportTally(data.source(), operator=audience == "operator")
    assert grouped._grouped is not None  # the in-memory path is the one taken
    whole = RENDERERS[form](materialized(report_of(data.source(), check_audience(audience))))
    assert "".join(written) == whole
    assert RENDERERS[form](build_report(store, repeated, audience=audience)) == whole


@pytest.mark.parametrize("audience", AUDIENCES)
@pytest.mark.parametrize("form", sorted(CHUNKS))
def test_a_streamed_report_holds_no_more_than_a_case_of_cells(
    store: Store, repeated: str, form: str, audience: str
) -> None:
    source = open_eval(store, repeated)
    alive = 0
    most = 0

    def gone() -> None:
        nonlocal alive
        alive -= 1

    def read(suite_id: str | None) -> Iterator[CellData]:
        nonlocal alive, most
        for cell in source.read(suite_id):
            alive += 1
            most = max(most, alive)
            weakref.finalize(cell, gone)
            yield cell
            del cell

    counted = replace(source, read=read)
    for _ in CHUNKS[form](report_of(counted, check_audience(audience))):
        pass
    assert source.info.cells_total > 4 * REPETITIONS
    assert 0 < most <= REPETITIONS + 2  # a case's cells, the one that ends it, one read


def test_the_cache_writes_a_report_and_keeps_it(store: Store, repeated: str) -> None:
    cache = ReportCache()
    written: list[str] = []
    cache.write(store, repeated, audience="operator", form="md", write=written.append)
    again: list[str] = []
    cache.write(store, repeated, audience="operator", form="md", write=again.append)
    assert (cache.renders, cache.hits, cache.stored_writes) == (1, 1, 1)
    assert again == ["".join(written)]  # kept: written whole
    fresh = ReportCache()
    assert fresh.report(
        store, repeated, audience="operator", form="md", render=RENDERERS["md"]
    ) == "".join(written)
    assert (fresh.renders, fresh.stored_hits) == (0, 1)


def test_a_text_past_the_store_bound_is_streamed_and_not_kept(store: Store, repeated: str) -> None:
    cache = ReportCache(max_stored_bytes=1_000)
    written: list[str] = []
    cache.write(store, repeated, audience="operator", form="json", write=written.append)
    assert len("".join(written)) > 1_000
    assert cache.stored_writes == 0 and len(cache) == 0
    assert cache.prerender(store, repeated, {"json": CHUNKS["json"]}) == 2  # rendered, not kept
    assert cache.stored_writes == 0 and len(cache) == 0
