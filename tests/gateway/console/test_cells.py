"""The case explorer: the cells on an eval's page (filters, keyset pages, the bounded
search), a cell's own page, the changed cells of a comparison; on both stores, for each
role, with an author never reaching a holdout cell (docs/integrity.md)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from evals.reports import _explore
from evals.suites import install_suite
from records import CellSpec, Store, eval_id
from records._models import EvalCell
from tests.evals.suites._make import case, make_suite
from tests.gateway.console._inproc import Console, console
from tests.gateway.console._runs import full_eval
from tests.gateway.console._world import HOSTILE
from tests.gateway.server._gateway import register_triage

TRIAGE = "acme/ticket-triage"
HOLDOUT_WORDS = "Refund please"  # every holdout input; no public one
# The triage agent labels "Cannot log in" tickets `account`, "Refund please" `billing`.
PUBLIC = [
    case("p0", "Cannot log in 0", "account", tags=["login"]),
    case("p1", "Cannot log in 1", "account"),
    case("p2", "Cannot log in 2", "nobody-says-this", tags=["login", "hard"]),
]
HOLDOUT = [
    case("h0", "Refund please 0", "nobody-says-this", tags=["hard"]),
    case("h1", "Refund please 1", "billing"),
]


def _run(store: Store, home: Path) -> str:
    return full_eval(store, home, TRIAGE, concurrency=2)


def _cells(store: Store, run: str) -> dict[str, int]:
    """Each case's cell index (one repetition each)."""
    with store.read() as session:
        rows = session.execute(
            EvalCell.__table__.select().where(EvalCell.eval_id == run)  # type: ignore[attr-defined]
        ).all()
    return {row.case_id: row.idx for row in rows}


def _done(live: Console, tmp_path: Path) -> tuple[str, dict[str, int], str]:
    """An eval run to its end, each case's cell index and the eval's page."""
    run = _run(live.store, tmp_path / "home")
    return run, _cells(live.store, run), f"/ui/evals/{run}"


def _set(store: Store, run: str, idx: int, **values: Any) -> None:
    with store.write() as session:
        session.execute(
            update(EvalCell).where(EvalCell.eval_id == run, EvalCell.idx == idx).values(**values)
        )


@pytest.fixture
def live(store: Store, tmp_path: Path) -> Iterator[Console]:
    install_suite(store, make_suite(tmp_path, public=PUBLIC, holdout=HOLDOUT))
    register_triage(store)
    with console(store, tmp_path / "home") as built:
        yield built


def _rows(page: str) -> list[str]:
    """The case ids of the explorer's table, in order."""
    table = page.split('id="cells-title"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<td>[^<]*</td><td>([^<]*)</td><td>(?:public|holdout)</td>", table)


def test_the_operator_explores_every_cell_under_each_filter(live: Console, tmp_path: Path) -> None:
    run = _run(live.store, tmp_path / "home")
    base = f"/ui/evals/{run}"

    def cases(query: str = "") -> list[str]:
        response = live.get(f"{base}?{query}", "operator")
        assert response.status_code == 200, response.text[:500]
        return _rows(response.text)

    assert cases() == ["p0", "p1", "p2", "h0", "h1"]  # suite, case, repetition
    assert cases("outcome=failures") == ["p2", "h0"]
    assert cases("outcome=passes") == ["p0", "p1", "h1"]
    assert cases("outcome=errors") == []
    assert cases("tag=hard") == ["p2", "h0"]
    assert cases("tag=login&outcome=passes") == ["p0"]
    assert cases("check=label") == ["p2", "h0"]
    assert cases("check=no-such-check") == []
    assert cases("split=holdout") == ["h0", "h1"]
    assert cases("text=refund") == ["h0", "h1"]  # the input, any case
    assert cases("text=account") == ["p0", "p1", "p2"]  # the output
    assert cases("text=P2") == ["p2"]  # the case id
    page = live.get(f"{base}?outcome=failures", "operator").text
    assert "label" in page.split('id="cells-title"')[1]  # the failed check is named
    for bad in ("outcome=nope", "split=other", "tag=" + "x" * 201, "after=-1"):
        answer = live.get(f"{base}?{bad}", "operator")
        assert answer.status_code == 400, bad
        assert 'role="alert"' in answer.text


def test_an_author_explores_the_public_cells_alone(live: Console, tmp_path: Path) -> None:
    run, index, base = _done(live, tmp_path)
    for query in ("", "outcome=failures", "tag=hard", "check=label", "text=refund", "text=h0"):
        page = live.get(f"{base}?{query}", "org:acme")
        assert page.status_code == 200, (query, page.text[:300])
        assert HOLDOUT_WORDS not in page.text and ">h0<" not in page.text, query
        assert set(_rows(page.text)) <= {"p0", "p1", "p2"}, query
    assert _rows(live.get(f"{base}?outcome=failures", "org:acme").text) == ["p2"]
    # The holdout is not a split an author may filter by.
    assert live.get(f"{base}?split=holdout", "org:acme").status_code == 400
    # A holdout cell's page is the very answer an index that does not exist gets.
    hidden = live.get(f"{base}/cells/{index['h0']}", "org:acme")
    missing = live.get(f"{base}/cells/999999", "org:acme")
    junk = live.get(f"{base}/cells/x1", "org:acme")
    assert hidden.status_code == missing.status_code == junk.status_code == 404
    assert hidden.text == missing.text == junk.text
    assert HOLDOUT_WORDS not in hidden.text
    # Nor does a public cell's prev/next lead there.
    last_public = live.get(f"{base}/cells/{index['p2']}", "org:acme")
    assert last_public.status_code == 200 and "No next cell" in last_public.text
    assert f"/cells/{index['h0']}" not in last_public.text
    operator = live.get(f"{base}/cells/{index['h0']}", "operator")
    assert operator.status_code == 200 and HOLDOUT_WORDS in operator.text  # can fail
    # Another org's eval is refused, as its eval page is.
    assert live.get(f"{base}/cells/{index['p0']}", "org:other").status_code == 403
    assert live.get(f"{base}/cells/{index['p0']}", "caller:finance-bot").status_code == 403


def test_a_cell_page_shows_everything_with_prev_and_next_within_the_filter(
    live: Console, tmp_path: Path
) -> None:
    run, index, base = _done(live, tmp_path)
    page = live.get(f"{base}/cells/{index['p2']}?outcome=failures", "operator")
    assert page.status_code == 200, page.text[:500]
    text = page.text
    assert "Cannot log in 2" in text  # the case's input
    assert "nobody-says-this" in text and "account" in text  # expected, actual
    assert "Latency (ms)" in text and "Attempts" in text
    # Within the filter: the next failure is h0 (p0 and p1 before p2 pass).
    assert f'href="{base}/cells/{index["h0"]}?outcome=failures" rel="next"' in text
    assert "No previous cell" in text  # p0 and p1 pass
    unfiltered = live.get(f"{base}/cells/{index['p2']}", "operator").text
    assert f'href="{base}/cells/{index["p1"]}" rel="prev"' in unfiltered


def test_a_cell_without_output_or_checks_and_one_with_the_largest_output(
    live: Console, tmp_path: Path
) -> None:
    run, index, base = _done(live, tmp_path)
    _set(
        live.store,
        run,
        index["p0"],
        outcome_code="timeout",
        passed=False,
        output=None,
        checks=None,
        tags=[],
        latency_ms=None,
        cost_usd=None,
        outcome={"code": "timeout", "error": HOSTILE},
    )
    huge = {"label": "A" * (4 * 1024 * 1024 - 100)}  # the executor's largest output
    _set(live.store, run, index["p1"], output=huge)
    listing = live.get(f"{base}?outcome=errors", "operator")
    assert _rows(listing.text) == ["p0"]
    assert "timeout" in listing.text
    errored = live.get(f"{base}/cells/{index['p0']}", "operator")
    assert errored.status_code == 200
    assert "Not graded" in errored.text and "<script>document" not in errored.text
    large = live.get(f"{base}/cells/{index['p1']}", "operator")
    assert large.status_code == 200
    assert "more characters)" in large.text and len(large.text) < 100_000
    searched = live.get(f"{base}?text=AAAA", "operator")
    assert _rows(searched.text) == ["p1"]


def test_pages_of_cells_go_on_by_index_and_a_search_stops_at_its_bound(
    live: Console, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = live.store
    run = eval_id()
    n = _explore.PAGE * 2 + 5
    store.evals.create(
        eval_id=run,
        agent_id=TRIAGE,
        agent_version=store.agents.get(TRIAGE).version,
        plan={"agent": TRIAGE, "suites": []},
        plan_digest="0" * 64,
        full_plan=False,
        cells=[
            CellSpec(i, "tiny", 1, "public", f"c{i:04d}", "0" * 64, 0, [], f"r-{i}")
            for i in range(n)
        ],
    )
    base = f"/ui/evals/{run}"
    seen: list[str] = []
    query = ""
    for _ in range(4):
        page = live.get(f"{base}?{query}", "org:acme").text
        seen += _rows(page)
        found = re.search(r'href="[^"]*\?([^"#]*)#cells">Next cells', page)
        if found is None:
            break
        query = found.group(1).replace("&amp;", "&")
    assert seen == [f"c{i:04d}" for i in range(n)]  # each once, in order
    assert "pending" in page
    monkeypatch.setattr(_explore, "SCAN", 30)
    page = live.get(f"{base}?text=c0100", "operator").text
    assert _rows(page) == [] and "Searched up to cell 29" in page
    page = live.get(f"{base}?text=c0100&after=89", "operator").text
    assert _rows(page) == ["c0100"]


def test_compare_lists_the_changed_cells_with_both_cell_pages(
    live: Console, tmp_path: Path
) -> None:
    store = live.store
    first, second = _run(store, tmp_path / "home"), _run(store, tmp_path / "home")
    one, two = _cells(store, first), _cells(store, second)
    _set(store, second, two["p0"], passed=False)  # a public cell changed
    _set(store, second, two["h1"], passed=False)  # a holdout cell changed
    path = f"/ui/compare?base={first}&candidate={second}"
    operator = live.get(path, "operator").text
    assert "Changed cells" in operator
    for case_id in ("p0", "h1"):
        assert f'href="/ui/evals/{first}/cells/{one[case_id]}"' in operator
        assert f'href="/ui/evals/{second}/cells/{two[case_id]}"' in operator
    author = live.get(path, "org:acme").text
    assert f'href="/ui/evals/{second}/cells/{two["p0"]}"' in author
    assert f"/cells/{two['h1']}" not in author and ">h1<" not in author
    assert "status changed: 1 (the public split)" in author
