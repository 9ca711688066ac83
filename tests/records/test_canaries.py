"""Canary runs and drift tests on SQLite and PostgreSQL (records/_canaries.py)."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from records import Advance, CanaryRun, Store, utcnow
from records._pages import encode_cursor
from schema.errors import UsageError
from tests._threads import in_threads


def _run(
    n: int, passed: bool, *, eval_id: str = "ev_1", capability: str = "calc.sum", **kw: Any
) -> CanaryRun:
    values: dict[str, Any] = {
        "request_id": f"req-{capability}-{eval_id}-{n}",
        "agent_id": "acme/calc",
        "agent_version": "1.0.0",
        "capability": capability,
        "record_eval_id": eval_id,
        "suite_id": "calc-sum",
        "suite_version": 1,
        "outcome": "ok",
        "passed": passed,
        "cost_usd": Decimal("0.001"),
        "latency_ms": 1.5,
        "at": utcnow(),
    }
    values.update(kw)
    return CanaryRun(**values)


def _counting(drift_after: int | None = None) -> Advance:
    """A test that counts what it saw and decides drift at its `drift_after`-th failure."""

    def advance(
        state: dict[str, Any] | None, passed: bool
    ) -> tuple[dict[str, Any], dict[str, Any] | None]:
        seen = dict(state or {"seen": 0, "failed": 0})
        seen["seen"] += 1
        seen["failed"] += not passed
        drift = None
        if drift_after is not None and seen["failed"] >= drift_after:
            drift = {"failed": seen["failed"]}
        return seen, drift

    return advance


def test_runs_advance_the_test_and_a_new_record_starts_it_afresh(store: Store) -> None:
    canaries = store.canaries
    for n in range(5):
        standing = canaries.record(_run(n, n != 2), _counting())
    assert (standing.graded, standing.passed) == (5, 4)
    assert standing.state == {"seen": 5, "failed": 1}
    assert standing.drift is None and standing.drifted_at is None
    fresh = canaries.record(_run(0, True, eval_id="ev_2"), _counting())
    assert (fresh.record_eval_id, fresh.graded, fresh.passed) == ("ev_2", 1, 1)
    assert fresh.state == {"seen": 1, "failed": 0}


def test_a_drift_is_kept_once_with_its_evidence_and_only_a_new_record_clears_it(
    store: Store,
) -> None:
    canaries = store.canaries
    at = utcnow()
    for n in range(3):
        canaries.record(_run(n, False, at=at + timedelta(seconds=n)), _counting(drift_after=2))
    standing = canaries.standings("acme/calc", "1.0.0")[0]
    assert standing.drift == {"failed": 2}
    assert standing.drifted_at == at + timedelta(seconds=1)
    assert canaries.drifted("acme/calc", "1.0.0", "ev_1") == standing
    assert canaries.drifted("acme/calc", "1.0.0", "ev_2") is None
    canaries.record(_run(0, True, eval_id="ev_2"), _counting(drift_after=2))
    assert canaries.drifted("acme/calc", "1.0.0", "ev_2") is None
    assert canaries.standings("acme/calc", "1.0.0")[0].drift is None


def test_today_counts_per_capability_and_adds_up_the_cost(store: Store) -> None:
    now = utcnow()
    canaries = store.canaries
    canaries.record(_run(0, True, at=now - timedelta(days=1, minutes=1)), _counting())
    for n in range(1, 4):
        canaries.record(_run(n, True, at=now), _counting())
    canaries.record(_run(9, True, capability="calc.product", at=now), _counting())
    counts, spent = canaries.today("acme/calc", now)
    assert counts == {"calc.sum": 3, "calc.product": 1}
    assert spent == Decimal("0.004")
    assert canaries.today("acme/other", now) == ({}, Decimal(0))


def test_the_window_holds_the_last_days_of_this_record(store: Store) -> None:
    now = utcnow()
    canaries = store.canaries
    canaries.record(_run(0, False, at=now - timedelta(days=8)), _counting())
    for n in range(1, 7):
        canaries.record(_run(n, n % 3 != 0, at=now - timedelta(hours=n)), _counting())
    canaries.record(_run(9, True, capability="calc.product", at=now), _counting())
    scored = canaries.with_window("acme/calc", "1.0.0", "ev_1", now)
    seen, graded, passed = scored["calc.sum"]
    # Since the eval: all 7; the window leaves out the run 8 days old.
    assert (seen.graded, seen.passed, graded, passed) == (7, 4, 6, 4)
    assert scored["calc.product"][1:] == (1, 1)
    # A state whose window is empty still shows its totals.
    later = canaries.with_window("acme/calc", "1.0.0", "ev_1", now + timedelta(days=30))
    assert later["calc.sum"][0].graded == 7 and later["calc.sum"][1:] == (0, 0)
    # ev_0's first canary restarts the state: ev_1 has no standing left to show.
    canaries.record(_run(0, True, eval_id="ev_0", at=now), _counting())
    assert canaries.with_window("acme/calc", "1.0.0", "ev_0", now)["calc.sum"][1:] == (1, 1)
    assert "calc.sum" not in canaries.with_window("acme/calc", "1.0.0", "ev_1", now)
    assert canaries.with_window("acme/other", "1.0.0", "ev_1", now) == {}


def test_runs_are_listed_newest_first_in_pages(store: Store) -> None:
    now = utcnow()
    for n in range(7):
        store.canaries.record(_run(n, True, at=now + timedelta(seconds=n)), _counting())
    seen: list[str] = []
    cursor = None
    while True:
        page = store.canaries.list(agent_id="acme/calc", cursor=cursor, limit=3)
        seen += [r.request_id for r in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == [f"req-calc.sum-ev_1-{n}" for n in reversed(range(7))]
    assert store.canaries.list(agent_id="acme/other").items == []
    assert page.items[-1].to_json()["suite"] == "calc-sum@1"
    for bad in ("", "not a time|x"):  # a caller's cursor: never an internal error
        with pytest.raises(UsageError, match="not a valid cursor"):
            store.canaries.list(cursor=encode_cursor(bad) or "AA")


def test_two_writers_grading_at_once_both_count(store: Store) -> None:
    def grade(worker: int) -> None:
        for n in range(25):
            store.canaries.record(_run(worker * 100 + n, n % 2 == 0), _counting())

    assert in_threads(grade, range(2)) == []
    standing = store.canaries.standings("acme/calc", "1.0.0")[0]
    assert (standing.graded, standing.passed) == (50, 26)
    assert standing.state == {"seen": 50, "failed": 24}


def test_two_first_canaries_of_a_version_at_once_both_count(store: Store) -> None:
    """The first canaries of a version, recorded at once (the gateway has several in
    flight): both count. On PostgreSQL both found no state row and both inserted it, and
    the second failed on the key, its run lost."""
    inside = threading.Event()
    errors: list[BaseException] = []

    def slow(state: dict[str, Any] | None, passed: bool) -> Any:
        inside.set()
        time.sleep(0.3)  # the other writer reaches the state row meanwhile
        return _counting()(state, passed)

    def grade(n: int, advance: Advance) -> None:
        try:
            store.canaries.record(_run(n, True), advance)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    first = threading.Thread(target=grade, args=(0, slow))
    first.start()
    assert inside.wait(10)
    second = threading.Thread(target=grade, args=(1, _counting()))
    second.start()
    first.join()
    second.join()
    assert errors == []
    standing = store.canaries.standings("acme/calc", "1.0.0")[0]
    assert (standing.graded, standing.passed) == (2, 2)
