"""GET /v1/agents?min_eval_score=: filtered before paginating, every page full but the last."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from records import Store, eval_id
from tests.gateway.server._gateway import Gateway, install_tiny, register_triage, running_gateway
from tests.records._record import agent_record

pytestmark = pytest.mark.slow


def _give_record(
    store: Store, agent_id: str, version: str, score: Decimal | None, suite: str = "tiny"
) -> None:
    """A finished full eval's record, as evals would write it (only what listing reads)."""
    run = eval_id()
    store.evals.create(
        eval_id=run,
        agent_id=agent_id,
        agent_version=version,
        plan={},
        plan_digest="0" * 64,
        full_plan=True,
        cells=[],
    )
    record = agent_record(
        agent=agent_id,
        agent_version=version,
        eval_id=run,
        eval_score=score,
        suites={suite: {"version": 1}},
        stale=False,
    )
    store.evals.finish(run, result={"record": record.to_json()}, record=record)


def _populate(store: Store, root: Path) -> list[str]:
    """30 acme agents of which 12 qualify at 0.5, plus near misses of every kind."""
    install_tiny(store, root)
    qualifying = []
    for i in range(30):
        agent_id = register_triage(store, f"acme/agent-{i:02d}", version="1.0.0")
        version = "1.0.0"
        kind = i % 5
        if kind == 0:
            _give_record(store, agent_id, version, Decimal("0.9"))
        elif kind == 1:
            _give_record(store, agent_id, version, Decimal("0.5"))  # the floor itself qualifies
        elif kind == 2:
            _give_record(store, agent_id, version, Decimal("0.3"))
        elif kind == 3:
            # A perfect score graded on a suite no longer installed: stale.
            _give_record(store, agent_id, version, Decimal("1"), suite="gone")
        # kind 4: never evaluated
        if kind in (0, 1):
            qualifying.append(agent_id)
    # Scored, then a new version registered: the current version is unscored.
    register_triage(store, "acme/agent-30", version="1.0.0")
    _give_record(store, "acme/agent-30", "1.0.0", Decimal("1"))
    register_triage(store, "acme/agent-30", version="2.0.0")
    # A record whose eval_score is null (an unverifiable capability).
    register_triage(store, "acme/agent-31", version="1.0.0")
    _give_record(store, "acme/agent-31", "1.0.0", None)
    # Qualifies, but in another org.
    register_triage(store, "other/agent-00", version="1.0.0")
    _give_record(store, "other/agent-00", "1.0.0", Decimal("0.95"))
    return qualifying


def _walk(gw: Gateway, params: dict[str, Any]) -> list[list[dict[str, Any]]]:
    pages: list[list[dict[str, Any]]] = []
    cursor: str | None = None
    while True:
        query = {**params, **({"cursor": cursor} if cursor else {})}
        response = gw.call("GET", "/v1/agents", "caller:finance-bot", params=query)
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append(body["items"])
        assert len(pages) < 50, "the cursor does not advance"
        cursor = body["next_cursor"]
        if cursor is None:
            return pages


def test_pages_are_full_and_walk_every_match_once(store: Store, tmp_path: Path) -> None:
    qualifying = _populate(store, tmp_path)
    assert len(qualifying) == 12
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        every = gw.call("GET", "/v1/agents", "operator", params={"limit": 1000}).json()
        views = {view["id"]: view for view in every["items"]}
        for limit in (1, 3, 4, 5, 7):
            params = {"min_eval_score": "0.5", "org": "acme", "limit": limit}
            pages = _walk(gw, params)
            sizes = [len(page) for page in pages]
            assert all(size == limit for size in sizes[:-1]), (limit, sizes)
            # 12 is a multiple of 1, 3 and 4: the last page is full and no empty one follows.
            assert 1 <= sizes[-1] <= limit, (limit, sizes)
            seen = [view["id"] for page in pages for view in page]
            assert seen == qualifying, limit  # in id order, none skipped, none repeated
            assert all(view == views[view["id"]] for page in pages for view in page)

        strict = _walk(gw, {"min_eval_score": "0.9", "limit": 2})
        assert [v["id"] for p in strict for v in p] == [
            *(a for i, a in enumerate(qualifying) if i % 2 == 0),
            "other/agent-00",
        ]
        assert _walk(gw, {"min_eval_score": "1", "limit": 2}) == [[]]
        # 0 still asks for a fresh record with a score.
        anything = _walk(gw, {"min_eval_score": "0", "org": "acme", "limit": 100})
        assert len(anything) == 1
        assert len(anything[0]) == 18  # kinds 0, 1 and 2
        # Without the filter, listing is as before.
        plain = _walk(gw, {"org": "acme", "limit": 10})
        assert [len(p) for p in plain] == [10, 10, 10, 2]


BAD = ["abc", "1.5", "-0.1", "", " ", "NaN", "sNaN", "Infinity", "-Infinity", "0x1", "1e1", "½"]
GOOD = ["0", "1", "-0", "0.50", "1e-1", "1.000"]


def test_a_bad_minimum_is_400_with_the_error_shape(store: Store, tmp_path: Path) -> None:
    register_triage(store, version="1.0.0")
    _give_record(store, "acme/ticket-triage", "1.0.0", Decimal("1"), suite="tiny")
    install_tiny(store, tmp_path)
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        for value in BAD:
            response = gw.call("GET", "/v1/agents", "operator", params={"min_eval_score": value})
            assert response.status_code == 400, (value, response.text)
            body = response.json()
            assert set(body) == {"error"}
            error = body["error"]
            assert set(error) == {"code", "message", "details"}
            assert error["code"] == "usage"
            assert "min_eval_score must be a number from 0 to 1" in error["message"]
            assert error["details"]["min_eval_score"] == value
        for value in GOOD:
            response = gw.call("GET", "/v1/agents", "operator", params={"min_eval_score": value})
            assert response.status_code == 200, (value, response.text)
            assert [v["id"] for v in response.json()["items"]] == ["acme/ticket-triage"]
