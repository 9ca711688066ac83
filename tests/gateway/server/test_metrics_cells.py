"""/metrics' holon_eval_cells gauge: it reflects the store, and a scrape within the
interval does not count the cells table again (statements counted on the engine)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from gateway.web import CachedCounts
from records import CellResultRow, CellSpec, Store, eval_id
from tests._clock import FakeClock
from tests.gateway.server._gateway import (
    Gateway,
    register_triage,
    running_gateway,
    statements,
)

GAUGE = re.compile(r'^holon_eval_cells\{outcome="([^"]+)"\} (\d+)$', re.MULTILINE)


def _cells(store: Store, total: int, results: list[str]) -> str:
    """An eval of `total` pending cells, the first len(results) recorded with those outcomes."""
    run = eval_id()
    store.evals.create(
        eval_id=run,
        agent_id="acme/ticket-triage",
        agent_version="1.1.0",
        plan={},
        plan_digest="0" * 64,
        full_plan=False,
        cells=[
            CellSpec(idx, "tiny", 1, "public", f"p{idx}", "0" * 64, 0, [], f"req-{run}-{idx}")
            for idx in range(total)
        ],
    )
    claimed = store.evals.claim(run, "test-owner", len(results), lease_s=60)
    recorded = store.evals.record(
        run,
        [
            CellResultRow(
                idx=cell.idx,
                fence=cell.fence,
                outcome_code=code,
                passed=code == "ok",
                cost_usd="0",
                latency_ms=1.0,
                attempts=1,
                outcome={"code": code},
                output=None,
                checks=None,
            )
            for cell, code in zip(claimed, results, strict=True)
        ],
        owner="test-owner",
    )
    assert len(recorded) == len(results)
    return run


def _gauge(gw: Gateway) -> dict[str, int]:
    response = gw.call("GET", "/metrics", "operator")
    assert response.status_code == 200, response.text
    assert "# TYPE holon_eval_cells gauge" in response.text
    return {outcome: int(n) for outcome, n in GAUGE.findall(response.text)}


@contextmanager
def counting_cell_scans(store: Store) -> Iterator[list[str]]:
    """Every statement that reads the eval cells table, as the engine sends it."""
    with statements(store, lambda sql: "eval_cells" in sql and "count(" in sql.lower()) as seen:
        yield seen


@pytest.mark.slow
def test_the_gauge_reflects_the_cells_in_the_store(store: Store, tmp_path: Path) -> None:
    register_triage(store)
    _cells(store, 6, ["ok", "ok", "timeout"])
    _cells(store, 2, ["agent_error"])
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        # Claimed-but-unrecorded and never-claimed cells have no outcome yet: pending.
        assert _gauge(gw) == {"ok": 2, "timeout": 1, "agent_error": 1, "pending": 4}


@contextmanager
def _scraped(
    store: Store, tmp_path: Path, cells: int, cells_ttl_s: float
) -> Iterator[tuple[Gateway, list[str]]]:
    """A gateway counting cells at most every `cells_ttl_s`, over `cells` cells of one eval
    (the first `ok`); the statements counting them while the caller scrapes."""
    register_triage(store)
    _cells(store, cells, ["ok"])
    with running_gateway(store, tmp_path / "home", eval_workers=0, cells_ttl_s=cells_ttl_s) as gw:
        with counting_cell_scans(store) as scans:
            yield gw, scans


@pytest.mark.slow
def test_scrapes_within_the_interval_count_the_cells_once(store: Store, tmp_path: Path) -> None:
    with _scraped(store, tmp_path, 4, cells_ttl_s=300) as (gw, scans):
        first = _gauge(gw)
        _cells(store, 3, ["invalid_response"])  # written between the two scrapes
        second = _gauge(gw)
        third = _gauge(gw)
    assert len(scans) == 1, scans
    assert first == {"ok": 1, "pending": 3}
    # Within the interval the gauge is the earlier count: that is its freshness.
    assert second == third == first


@pytest.mark.slow
def test_without_an_interval_every_scrape_counts(store: Store, tmp_path: Path) -> None:
    # The listener does see the count: with no caching, two scrapes are two counts.
    with _scraped(store, tmp_path, 2, cells_ttl_s=0) as (gw, scans):
        assert _gauge(gw) == {"ok": 1, "pending": 1}
        _cells(store, 1, ["timeout"])
        assert _gauge(gw) == {"ok": 1, "pending": 1, "timeout": 1}
    assert len(scans) == 2, scans


def test_counts_again_only_after_the_interval() -> None:
    clock = FakeClock()
    cache = CachedCounts(30.0, clock)
    counts = iter([{"ok": 1}, {"ok": 2}])
    calls = 0

    def count() -> dict[str, int]:
        nonlocal calls
        calls += 1
        return next(counts)

    assert cache.get(count) == {"ok": 1}
    clock.now += 29.9
    assert cache.get(count) == {"ok": 1}
    assert calls == 1
    clock.now += 0.1
    assert cache.get(count) == {"ok": 2}
    assert calls == 2


def test_a_failed_count_caches_nothing() -> None:
    cache = CachedCounts(30.0, FakeClock())

    def broken() -> dict[str, int]:
        raise RuntimeError("store down")

    with pytest.raises(RuntimeError, match="store down"):
        cache.get(broken)
    assert cache.get(lambda: {"ok": 3}) == {"ok": 3}


def test_one_count_at_a_time_others_get_the_previous_value() -> None:
    clock = FakeClock()
    cache = CachedCounts(30.0, clock)
    assert cache.get(lambda: {"ok": 1}) == {"ok": 1}
    clock.now += 31  # expired: the next scrape counts again

    started, release = threading.Event(), threading.Event()
    results: list[dict[str, int]] = []

    def slow_count() -> dict[str, int]:
        started.set()
        assert release.wait(10)
        return {"ok": 2}

    counting = threading.Thread(target=lambda: results.append(cache.get(slow_count)))
    counting.start()
    assert started.wait(10)

    def must_not_count() -> dict[str, int]:
        raise AssertionError("a second count ran while one was in progress")

    # A scrape during the count answers at once with the previous value.
    assert cache.get(must_not_count) == {"ok": 1}
    release.set()
    counting.join(10)
    assert results == [{"ok": 2}]
    assert cache.get(must_not_count) == {"ok": 2}


def test_the_first_count_is_waited_for_not_repeated() -> None:
    cache = CachedCounts(30.0, FakeClock())
    started, release = threading.Event(), threading.Event()
    calls = 0

    def slow_count() -> dict[str, int]:
        nonlocal calls
        calls += 1
        started.set()
        assert release.wait(10)
        return {"ok": 5}

    results: list[dict[str, int]] = []
    threads = [
        threading.Thread(target=lambda: results.append(cache.get(slow_count))) for _ in range(4)
    ]
    threads[0].start()
    assert started.wait(10)
    for thread in threads[1:]:
        thread.start()
    release.set()
    for thread in threads:
        thread.join(10)
    assert results == [{"ok": 5}] * 4
    assert calls == 1
