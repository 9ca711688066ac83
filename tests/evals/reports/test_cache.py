"""The kept reports of done evals (evals.reports.ReportCache): the same bytes as a fresh
render, never a stale one whatever changed in the store, only done evals, bounded."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from evals import make_plan, resume, start
from evals.reports import (
    RENDERERS,
    ReportCache,
    report_key,
)
from gateway.service import StoreService
from records import CellResultRow, Store, utcnow
from schema.errors import NotFound, UsageError
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import fresh_report, kept_report, run_eval, setup


def test_a_done_eval_is_rendered_once_and_served_byte_identical(
    sqlite_store: Store, tmp_path: Path
) -> None:
    setup(sqlite_store, tmp_path)
    eval_id = run_eval(sqlite_store, tmp_path / "home")
    cache = ReportCache()
    for audience in ("author", "operator"):
        for form in RENDERERS:
            first = kept_report(cache, sqlite_store, eval_id, audience, form)
            assert first == fresh_report(sqlite_store, eval_id, audience, form)
            assert kept_report(cache, sqlite_store, eval_id, audience, form) == first
    # One text per audience and form: each built once, then served.
    assert (len(cache), cache.misses, cache.hits) == (8, 8, 8)
    # The author's and the operator's are never one another's.
    author = kept_report(cache, sqlite_store, eval_id, "author", "json")
    assert author != kept_report(cache, sqlite_store, eval_id, "operator", "json")


def test_the_gateway_client_serves_kept_reports(sqlite_store: Store, tmp_path: Path) -> None:
    setup(sqlite_store, tmp_path)
    home = tmp_path / "home"
    eval_id = run_eval(sqlite_store, home)
    client = StoreService(sqlite_store, home)
    text = client.evals.report(eval_id, audience="operator", form="html")
    assert text == fresh_report(sqlite_store, eval_id, "operator", "html")
    assert client.evals.report(eval_id, audience="operator", form="html") == text
    assert client.evals.reports.hits == 1


def test_whatever_changes_in_the_store_the_report_is_rendered_again(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """Two gateway processes share a store, not their caches: what one changes (here
    retention, which drops the outputs) is seen by the other's next request."""
    setup(sqlite_store, tmp_path)
    eval_id = run_eval(sqlite_store, tmp_path / "home")
    cache = ReportCache()
    before = kept_report(cache, sqlite_store, eval_id, "operator", "json")
    assert '"output":{' in before
    key = report_key(sqlite_store, eval_id, "operator", "json")
    assert sqlite_store.evals.drop_outputs(utcnow() + timedelta(seconds=1)) > 0
    assert report_key(sqlite_store, eval_id, "operator", "json") != key
    after = kept_report(cache, sqlite_store, eval_id, "operator", "json")
    assert after != before and '"output":{' not in after
    assert after == fresh_report(sqlite_store, eval_id, "operator", "json")
    assert cache.hits == 0


def test_only_a_done_eval_is_kept(sqlite_store: Store, tmp_path: Path) -> None:
    setup(sqlite_store, tmp_path)
    home = tmp_path / "home"
    info = start(sqlite_store, make_plan(sqlite_store, AGENT_ID, home=home))
    cache = ReportCache()
    assert report_key(sqlite_store, info.id, "operator", "json") is None
    running = kept_report(cache, sqlite_store, info.id, "operator", "json")
    claimed = sqlite_store.evals.claim(info.id, "host:1:test", 3, 3600)
    sqlite_store.evals.record(
        info.id,
        [
            CellResultRow(c.idx, c.fence, "ok", True, "0.0001", 5.0, 1, {}, {"label": "x"}, [])
            for c in claimed
        ],
    )
    later = kept_report(cache, sqlite_store, info.id, "operator", "json")
    assert later != running and later == fresh_report(sqlite_store, info.id, "operator", "json")
    assert len(cache) == 0
    # Done once resumed: kept.
    assert resume(sqlite_store, info.id, home=home).status == "done"
    done = kept_report(cache, sqlite_store, info.id, "operator", "json")
    assert done == fresh_report(sqlite_store, info.id, "operator", "json") and len(cache) == 1
    # Cancelled (a cell in flight may still be recorded): not kept.
    cancelled = start(sqlite_store, make_plan(sqlite_store, AGENT_ID, home=home))
    sqlite_store.evals.cancel(cancelled.id)
    assert report_key(sqlite_store, cancelled.id, "operator", "json") is None
    kept_report(cache, sqlite_store, cancelled.id, "operator", "json")
    assert len(cache) == 1


def test_the_cache_is_bounded_least_recently_used_first(
    sqlite_store: Store, tmp_path: Path
) -> None:
    setup(sqlite_store, tmp_path)
    home = tmp_path / "home"
    first, second = run_eval(sqlite_store, home), run_eval(sqlite_store, home)
    size = len(fresh_report(sqlite_store, first, "operator", "md"))
    cache = ReportCache(max_characters=size + size // 2)  # room for one such text
    kept_report(cache, sqlite_store, first, "operator", "md")
    kept_report(cache, sqlite_store, second, "operator", "md")
    assert len(cache) == 1
    kept_report(cache, sqlite_store, second, "operator", "md")
    assert cache.hits == 1
    kept_report(cache, sqlite_store, first, "operator", "md")
    assert cache.hits == 1  # the first was dropped for the second
    # A text longer than the whole bound is served, never kept.
    tiny = ReportCache(max_characters=10)
    assert kept_report(tiny, sqlite_store, first, "operator", "md") == fresh_report(
        sqlite_store, first, "operator", "md"
    )
    assert len(tiny) == 0


def test_an_unknown_eval_or_audience_is_refused(sqlite_store: Store, tmp_path: Path) -> None:
    setup(sqlite_store, tmp_path)
    eval_id = run_eval(sqlite_store, tmp_path / "home")
    cache = ReportCache()
    with pytest.raises(NotFound):
        kept_report(cache, sqlite_store, "ev_nope", "operator", "json")
    with pytest.raises(UsageError):
        kept_report(cache, sqlite_store, eval_id, "everyone", "json")
