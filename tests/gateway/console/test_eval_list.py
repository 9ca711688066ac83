"""The console's list of evals (/ui/evals): filters, paging, roles, progress, escaping;
and the console's own page for any other path under /ui/."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import update

from gateway.console._eval_list import FILTERS, PAGE, STATUS_NOTES, STATUS_WORDS
from records import CellSpec, CellStatus, EvalStatus, Store, eval_id
from records._models import EvalCell, EvalRun
from tests.gateway.console._inproc import Console, console
from tests.gateway.console._runs import full_eval
from tests.gateway.console._world import HOSTILE
from tests.gateway.server._gateway import install_tiny, register_triage

TRIAGE = "acme/ticket-triage"


def _fake(
    store: Store,
    agent_id: str,
    *,
    suites: list[dict[str, Any]] | None = None,
    status: EvalStatus = EvalStatus.RUNNING,
    cells: int = 4,
    done: int = 0,
    version: str = "1",
    created_at: datetime | None = None,
) -> str:
    """An eval row of `agent_id` (its cells pending; `done` of them recorded)."""
    run = eval_id()
    planned = suites or [
        {
            "id": "tiny",
            "version": 1,
            "capability": "ticket.classify",
            "repetitions": 1,
            "cases": {"public": cells, "holdout": 0},
        }
    ]
    store.evals.create(
        eval_id=run,
        agent_id=agent_id,
        agent_version=version,
        plan={"agent": agent_id, "agent_version": version, "suites": planned},
        plan_digest="0" * 64,
        full_plan=False,
        cells=[
            CellSpec(i, str(planned[0]["id"]), 1, "public", f"c{i}", "0" * 64, 0, [], f"{run}-{i}")
            for i in range(cells)
        ],
    )
    with store.write() as session:
        session.execute(
            update(EvalCell)
            .where(EvalCell.eval_id == run, EvalCell.idx < done)
            .values(status=CellStatus.DONE)
        )
        if created_at is not None:
            session.execute(update(EvalRun).where(EvalRun.id == run).values(created_at=created_at))
    if status == EvalStatus.CANCELLED:
        store.evals.cancel(run)
    elif status != EvalStatus.RUNNING:  # a status word's page: no result is needed
        with store.write() as session:
            session.execute(update(EvalRun).where(EvalRun.id == run).values(status=status))
    return run


@pytest.fixture
def live(sqlite_store: Store, tmp_path: Path) -> Iterator[Console]:
    install_tiny(sqlite_store, tmp_path)
    register_triage(sqlite_store)
    register_triage(sqlite_store, "other/ticket-triage")
    with console(sqlite_store, tmp_path / "home") as built:
        yield built


def _ids(page: str, ids: list[str]) -> list[str]:
    """The ids of `ids` on the page, in the page's order."""
    found = sorted((page.find(f">{i}<"), i) for i in ids if f">{i}<" in page)
    return [i for _, i in found]


def test_operator_sees_every_eval_newest_first_with_status_and_progress(
    live: Console, tmp_path: Path
) -> None:
    done = full_eval(live.store, tmp_path / "home", TRIAGE)
    running = _fake(live.store, TRIAGE, cells=4, done=1)
    cancelled = _fake(live.store, "other/ticket-triage", status=EvalStatus.CANCELLED)
    page = live.get("/ui/evals", "operator")
    assert page.status_code == 200
    # Newest first: by id (time-ordered ULIDs; the real eval ran before the other two).
    assert _ids(page.text, [done, running, cancelled]) == [
        *sorted([cancelled, running])[::-1],
        done,
    ]
    assert f'href="/ui/evals/{running}"' in page.text and f'href="/ui/evals/{done}"' in page.text
    assert "1/4 cells" in page.text  # the running eval's progress, all its cells
    assert '<meta http-equiv="refresh" content="10">' in page.text
    for word in ("running", "done", "cancelled"):
        assert f"<td>{word}" in page.text
    # Nothing running on the page: no reload.
    quiet = live.get("/ui/evals?status=done", "operator")
    assert _ids(quiet.text, [done, running, cancelled]) == [done]
    assert "http-equiv" not in quiet.text
    assert 'href="/ui/evals">Evals</a>' in page.text  # in the navigation
    agent = live.get(f"/ui/agents/{TRIAGE}", "operator").text
    assert f'href="/ui/evals?agent={TRIAGE}"' in agent  # every eval of the agent


def test_every_eval_status_has_its_word_on_the_list_and_the_eval_page(live: Console) -> None:
    assert set(STATUS_WORDS) == set(STATUS_NOTES) == set(EvalStatus)
    for status in EvalStatus:
        run = _fake(live.store, TRIAGE, status=status)
        listed = live.get(f"/ui/evals?status={status}", "operator")
        assert f"<td>{STATUS_WORDS[status]}" in listed.text and run in listed.text
        shown = live.get(f"/ui/evals/{run}", "operator")
        assert shown.status_code == 200
        assert f'<span data-field="status">{STATUS_WORDS[status]}</span>' in shown.text
        assert STATUS_NOTES[status].replace("'", "&#39;") in shown.text


def test_filters(live: Console, tmp_path: Path) -> None:
    store = live.store
    other_suite = [
        {
            "id": "other-suite",
            "version": 2,
            "capability": "invoice.extract",
            "repetitions": 1,
            "cases": {"public": 1, "holdout": 0},
        }
    ]
    old = _fake(
        store, TRIAGE, status=EvalStatus.CANCELLED, created_at=datetime(2026, 1, 15, 12, tzinfo=UTC)
    )
    invoice = _fake(store, TRIAGE, suites=other_suite, status=EvalStatus.CANCELLED)
    theirs = _fake(store, "other/ticket-triage")
    everything = [old, invoice, theirs]

    def shown(query: str) -> list[str]:
        page = live.get(f"/ui/evals?{query}", "operator")
        assert page.status_code == 200, page.text
        return sorted(_ids(page.text, everything))

    assert shown("") == sorted(everything)
    assert shown("status=cancelled") == sorted([old, invoice])
    assert shown("status=running") == [theirs]
    assert shown(f"agent={quote('other/ticket-triage')}") == [theirs]
    assert shown("suite=other-suite") == [invoice]
    assert shown("capability=invoice.extract") == [invoice]
    assert shown("capability=ticket.classify") == sorted([old, theirs])
    assert shown("suite=tiny&capability=invoice.extract") == []
    assert shown("started_by=here") == sorted(everything)
    assert shown("started_by=imported") == []
    assert shown("from=2026-01-15&to=2026-01-15") == [old]
    assert shown("to=2026-01-14") == []
    assert shown("from=0001-01-01&to=9999-12-31") == sorted(everything)  # the ends of time
    today = datetime.now(UTC).date()
    assert shown(f"from={today - timedelta(days=1)}") == sorted([invoice, theirs])
    # The form shows the filters back, selected.
    page = live.get("/ui/evals?status=cancelled&suite=other-suite", "operator").text
    assert '<option value="cancelled" selected>' in page and 'value="other-suite"' in page
    assert "No evals match these filters" in live.get("/ui/evals?suite=none", "operator").text


@pytest.mark.parametrize(
    "query",
    [
        "status=failed",
        "started_by=someone",
        "from=yesterday",
        "from=2026-13-01",
        "to=2026-1-1",
        "from=2026-02-01&to=2026-01-01",
        "cursor=%C3%A9",
        "suite=" + "x" * 201,
        "agent=%00",
    ],
)
def test_bad_filters_are_a_400_page(live: Console, query: str) -> None:
    page = live.get(f"/ui/evals?{query}", "operator")
    assert page.status_code == 400, (query, page.status_code, page.text[:300])
    assert page.headers["content-type"].startswith("text/html")


@settings(
    max_examples=150,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.dictionaries(
        st.sampled_from([*FILTERS, "cursor"]),
        st.one_of(
            st.text(max_size=30),
            st.sampled_from(["running", "here", "2026-01-01", "9999-12-31", "0001-01-01"]),
        ),
        max_size=4,
    ),
    st.sampled_from(["operator", "org:acme", "caller:finance-bot"]),
)
def test_no_query_is_a_5xx(live: Console, params: dict[str, str], role: str) -> None:
    page = live.request("GET", "/ui/evals", params=params, headers=live.headers(role))
    assert page.status_code in (200, 400, 403), (params, page.status_code, page.text[:300])


def test_paging(live: Console) -> None:
    made = [_fake(live.store, TRIAGE, status=EvalStatus.CANCELLED) for _ in range(PAGE + 5)]
    first = live.get("/ui/evals", "operator").text
    on_first = _ids(first, made)
    newest = sorted(made, reverse=True)  # ids are time-ordered (ULIDs)
    assert on_first == newest[:PAGE]
    assert "Older evals" in first and "Newest</a>" not in first
    older = first.split('<a href="/ui/evals?')[-1].split('"')[0].replace("&amp;", "&")
    second = live.get(f"/ui/evals?{older}", "operator").text
    assert _ids(second, made) == newest[PAGE:]
    assert "Older evals" not in second and "Newest</a>" in second
    # Filters go along to the next page.
    filtered = live.get("/ui/evals?status=cancelled&agent=acme%2Fticket-triage", "operator").text
    assert "status=cancelled" in filtered.split("Older evals")[0].rsplit("href=", 1)[-1]


def test_roles_an_org_sees_its_own_a_caller_none(live: Console) -> None:
    ours = _fake(live.store, TRIAGE, cells=4, done=2)
    theirs = _fake(live.store, "other/ticket-triage", status=EvalStatus.CANCELLED)
    page = live.get("/ui/evals", "org:acme")
    assert page.status_code == 200
    assert ours in page.text and theirs not in page.text
    assert "2/4 cells (public)" in page.text
    # Asking for the other org's agent, suite or status shows nothing of it.
    for query in (f"agent={quote('other/ticket-triage')}", "status=cancelled", "suite=tiny"):
        assert theirs not in live.get(f"/ui/evals?{query}", "org:acme").text, query
    assert theirs in live.get("/ui/evals", "org:other").text
    assert ours not in live.get("/ui/evals", "org:other").text
    # An org of an agent-less name: nothing, and not another org's prefix.
    assert ours not in live.get("/ui/evals", "org:acm").text
    refused = live.get("/ui/evals", "caller:finance-bot")
    assert refused.status_code == 403 and ours not in refused.text
    assert 'href="/ui/evals"' not in live.get("/ui/mandates", "caller:finance-bot").text
    assert live.get("/ui/evals", None).headers["location"] == "/ui/sign-in"


def test_hostile_plan_text_is_escaped(live: Console) -> None:
    hostile = [
        {
            "id": HOSTILE,
            "version": 1,
            "capability": HOSTILE + "x" * 300,
            "repetitions": 1,
            "cases": {"public": 1, "holdout": 0},
        }
    ]
    run = _fake(live.store, TRIAGE, suites=hostile, version=HOSTILE)
    page = live.get("/ui/evals", "operator").text
    assert run in page
    assert "<script>" not in page and "<img" not in page and "<style>" not in page
    assert "&lt;script&gt;" in page
    assert "\\u202e" in page and "\u202e" not in page  # shown as an escape
    assert "more characters" in page  # the long capability is cut


def test_any_other_path_under_ui_is_the_consoles_404_page(live: Console) -> None:
    for path, role in (
        ("/ui/nope", "operator"),
        ("/ui/evals/x/y/z", "org:acme"),
        ("/ui/agents", "caller:finance-bot"),
        ("/ui/nope", None),
    ):
        page = live.get(path, role)
        assert page.status_code == 404, (path, page.status_code)
        assert page.headers["content-type"].startswith("text/html")
        assert "Not done: not_found" in page.text and "Content-Security-Policy" in page.headers
        if role is not None:
            assert "signed in as" in page.text
    posted = live.request("POST", "/ui/nothing-here", data={"a": "b"})
    assert posted.status_code == 404 and posted.headers["content-type"].startswith("text/html")
