"""Done evals' reports kept in the store (records.EvalReportRegistry behind
evals.reports.ReportCache): the same bytes as a fresh render, read by another process
without rendering, rendered again and replaced when anything they are made of changed,
an audience's row never another's, a too-large text not stored."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from evals import make_plan, start
from evals.reports import (
    RENDERERS,
    ReportCache,
    render_html,
    render_json,
    report_key,
)
from gateway.service import StoreService
from records import Store, open_store, utcnow
from records._models import EvalReportRow
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import fresh_report, kept_report, run_eval, setup


class Counted:
    """A renderer that counts its calls: a report served from the store is never one."""

    def __init__(self, form: str) -> None:
        self.render = RENDERERS[form]
        self.calls = 0

    def __call__(self, report: dict[str, Any]) -> str:
        self.calls += 1
        return self.render(report)


@pytest.fixture
def other(store: Store) -> Iterator[Store]:
    """A second store on the same database: another gateway process."""
    opened = open_store(store.engine.url.render_as_string(hide_password=False))
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def done(store: Store, tmp_path: Path) -> str:
    setup(store, tmp_path)
    return run_eval(store, tmp_path / "home")


def _row(store: Store, eval_id: str, audience: str, form: str) -> EvalReportRow | None:
    with store.read() as session:
        return session.get(EvalReportRow, (eval_id, audience, form))


def test_a_rendered_report_is_stored_and_another_process_reads_it_unrendered(
    store: Store, other: Store, done: str
) -> None:
    first = ReportCache()
    texts = {}
    for audience in ("author", "operator"):
        for form in RENDERERS:
            texts[audience, form] = kept_report(first, store, done, audience, form)
            assert texts[audience, form] == fresh_report(store, done, audience, form)
    assert (first.renders, first.stored_writes, first.stored_hits) == (8, 8, 0)
    assert store.eval_reports.count(done) == 8
    # Another process, its cache empty: every report read from the store, none rendered.
    second = ReportCache()
    for (audience, form), text in texts.items():
        counted = Counted(form)
        served = second.report(other, done, audience=audience, form=form, render=counted)
        assert served == text and counted.calls == 0
    assert (second.renders, second.stored_hits, second.stored_writes) == (0, 8, 0)
    # Then from its own memory, in front of the store.
    assert kept_report(second, other, done, "operator", "html") == texts["operator", "html"]
    assert second.hits == 1 and second.stored_hits == 8


def test_a_large_text_is_stored_compressed_and_read_back_identical(
    store: Store, other: Store, done: str
) -> None:
    text = kept_report(ReportCache(), store, done, "operator", "html")
    row = _row(store, done, "operator", "html")
    assert row is not None and row.compressed and len(row.body) < len(text.encode()) // 2
    assert kept_report(ReportCache(), other, done, "operator", "html") == text
    # Text the registry keeps as it is given: lone surrogates, astral characters, NUL.
    odd = "\udcff \U0001f600 \x00 é" * 5000
    key = "k" * 64
    assert store.eval_reports.put(done, "operator", "md", key, odd)
    assert other.eval_reports.get(done, "operator", "md", key) == odd
    assert other.eval_reports.get(done, "operator", "md", "j" * 64) is None
    # Discarded only under the key it was stored with.
    assert not store.eval_reports.discard(done, "operator", "md", "j" * 64)
    assert store.eval_reports.discard(done, "operator", "md", key)
    assert store.eval_reports.key(done, "operator", "md") is None


def test_a_changed_key_renders_again_and_replaces_the_row(
    store: Store, other: Store, done: str
) -> None:
    before = kept_report(ReportCache(), store, done, "operator", "json")
    assert '"output":{' in before
    # Retention drops the outputs: the kept reports (which show them) go with them.
    assert store.evals.drop_outputs(utcnow() + timedelta(seconds=1)) > 0
    assert store.eval_reports.count(done) == 0
    cache = ReportCache()
    after = kept_report(cache, other, done, "operator", "json")
    assert cache.renders == 1 and '"output":{' not in after
    assert after == fresh_report(store, done, "operator", "json")
    assert store.eval_reports.key(done, "operator", "json") == report_key(
        store, done, "operator", "json"
    )
    # A row under another key (anything the report is made of changed since) is not
    # served: rendered again, and the row replaced.
    with store.write() as session:
        session.execute(update(EvalReportRow).values(key="0" * 64, body=b"stale"))
    again = ReportCache()
    counted = Counted("json")
    assert again.report(other, done, audience="operator", form="json", render=counted) == after
    assert counted.calls == 1 and again.stored_writes == 1
    row = _row(store, done, "operator", "json")
    assert row is not None and row.body != b"stale"
    assert ReportCache().report(other, done, audience="operator", form="json", render=counted)
    assert counted.calls == 1


def test_an_author_is_never_served_the_operators_row(store: Store, other: Store, done: str) -> None:
    operator = kept_report(ReportCache(), store, done, "operator", "json")
    author = fresh_report(store, done, "author", "json")
    assert operator != author
    # Only the operator's report is stored: an author's read renders its own.
    cache = ReportCache()
    counted = Counted("json")
    assert cache.report(other, done, audience="author", form="json", render=counted) == author
    assert counted.calls == 1
    # A row filed under the author's name with the operator's key and bytes (as if
    # written under the wrong audience) is not the author's report: never served.
    operator_row = _row(store, done, "operator", "json")
    assert operator_row is not None
    with store.write() as session:
        session.execute(
            update(EvalReportRow)
            .where(EvalReportRow.eval_id == done, EvalReportRow.audience == "author")
            .values(
                key=operator_row.key, body=operator_row.body, compressed=operator_row.compressed
            )
        )
    fresh = ReportCache()
    assert kept_report(fresh, other, done, "author", "json") == author
    assert fresh.renders == 1 and fresh.stored_hits == 0
    # In HTML as in JSON: with both stored, each audience reads its own.
    operator_html = kept_report(ReportCache(), other, done, "operator", "html")
    author_html = kept_report(ReportCache(), other, done, "author", "html")
    reread = ReportCache()
    assert kept_report(reread, store, done, "author", "html") == author_html != operator_html
    assert author_html == fresh_report(store, done, "author", "html") and reread.stored_hits == 1


def test_a_report_over_the_bound_is_not_stored(store: Store, other: Store, done: str) -> None:
    text = fresh_report(store, done, "operator", "md")
    small = ReportCache(max_stored_bytes=len(text.encode()) - 1)
    assert kept_report(small, store, done, "operator", "md") == text
    assert small.stored_writes == 0 and store.eval_reports.key(done, "operator", "md") is None
    counted = Counted("md")
    assert ReportCache().report(other, done, audience="operator", form="md", render=counted)
    assert counted.calls == 1  # rendered again: nothing was stored
    # The bound counts UTF-8 bytes, not characters.
    assert not store.eval_reports.put(done, "author", "md", "k" * 64, "é" * 6, max_bytes=11)
    assert store.eval_reports.put(done, "author", "md", "k" * 64, "é" * 6, max_bytes=12)


def test_a_cache_of_this_process_alone_leaves_the_store_alone(store: Store, done: str) -> None:
    cache = ReportCache(stored=False)
    assert kept_report(cache, store, done, "operator", "md") == fresh_report(
        store, done, "operator", "md"
    )
    assert store.eval_reports.count(done) == 0


def test_prerender_stores_every_audience_once_from_one_read(
    store: Store, other: Store, done: str, tmp_path: Path
) -> None:
    cache = ReportCache()
    forms = {"html": render_html, "json": render_json}
    assert cache.prerender(store, done, forms) == 4
    for audience in ("author", "operator"):
        for form in forms:
            counted = Counted(form)
            text = ReportCache().report(other, done, audience=audience, form=form, render=counted)
            assert counted.calls == 0 and text == fresh_report(store, done, audience, form)
    assert cache.prerender(store, done, forms) == 0  # kept already
    assert ReportCache().prerender(other, done, forms) == 0
    # A running eval: nothing rendered ahead, nothing stored.
    running = start(store, make_plan(store, AGENT_ID, home=tmp_path / "home"))
    assert cache.prerender(store, running.id, forms) == 0
    assert store.eval_reports.count(running.id) == 0


def test_the_gateway_client_reads_through_the_store(
    store: Store, other: Store, done: str, tmp_path: Path
) -> None:
    one = StoreService(store, tmp_path / "home")
    assert one.evals.prerender(done) == 4
    two = StoreService(other, tmp_path / "home")
    text = two.evals.report(done, audience="author", form="html")
    assert text == fresh_report(store, done, "author", "html")
    assert two.evals.reports.renders == 0 and two.evals.reports.stored_hits == 1
    # A format not rendered ahead is rendered on its first view, then stored.
    two.evals.report(done, audience="author", form="junit")
    assert two.evals.reports.renders == 1
    with store.read() as session:
        forms = set(
            session.scalars(select(EvalReportRow.form).where(EvalReportRow.eval_id == done))
        )
    assert forms == {"html", "json", "junit"}
