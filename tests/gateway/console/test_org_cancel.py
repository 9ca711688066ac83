"""An org cancels an eval of its own agent from the eval's page, as `POST
/v1/evals/{eval}/cancel` admits it (docs/console.md): the operator's rules (the holdout
unit back only when no holdout case was sent), the author's view. Another org, a caller, a
form without its CSRF token or from another origin: refused, and the eval runs on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evals import make_plan, start
from records import Store
from tests.gateway.console._inproc import Console
from tests.gateway.console._runs import triage_console
from tests.gateway.server._gateway import register_triage

TRIAGE = "acme/ticket-triage"


@pytest.fixture
def live(sqlite_store: Store, tmp_path: Path) -> Iterator[Console]:
    with triage_console(sqlite_store, tmp_path) as built:
        register_triage(built.store, "other/ticket-triage")
        yield built


def _running(live: Console, tmp_path: Path) -> str:
    return start(live.store, make_plan(live.store, TRIAGE, home=tmp_path / "home")).id


def _spent(store: Store) -> int:
    (entry,) = store.exposure.list(suite_id="tiny")
    return entry.spent


def test_an_org_cancels_its_own_eval_from_its_page(live: Console, tmp_path: Path) -> None:
    run = _running(live, tmp_path)
    assert _spent(live.store) == 1
    page = live.get(f"/ui/evals/{run}", "org:acme").text
    assert f'action="/ui/evals/{run}/cancel"' in page
    assert f'action="/ui/evals/{run}/resume"' not in page  # resume stays the operator's
    cancelled = live.post(f"/ui/evals/{run}/cancel", "org:acme", {})
    assert cancelled.status_code == 303 and cancelled.headers["location"] == f"/ui/evals/{run}"
    assert live.store.evals.get(run).status == "cancelled"
    assert _spent(live.store) == 0  # no holdout case was sent: refunded
    after = live.get(f"/ui/evals/{run}", "org:acme").text
    assert f'action="/ui/evals/{run}/cancel"' not in after and f"/ui/agents/{TRIAGE}/eval" in after
    again = live.post(f"/ui/evals/{run}/cancel", "org:acme", {})
    assert again.status_code == 409 and "is cancelled, not running" in again.text


def test_a_sent_holdout_case_keeps_the_orgs_budget_spent(live: Console, tmp_path: Path) -> None:
    run = _running(live, tmp_path)
    live.store.evals.claim(run, "test-owner", 100, lease_s=60)
    assert live.post(f"/ui/evals/{run}/cancel", "org:acme", {}).status_code == 303
    assert live.store.evals.get(run).status == "cancelled" and _spent(live.store) == 1


def test_another_org_a_caller_and_forged_forms_cancel_nothing(
    live: Console, tmp_path: Path
) -> None:
    run = _running(live, tmp_path)
    path = f"/ui/evals/{run}/cancel"
    assert 'action="' + path not in live.get(f"/ui/evals/{run}", "org:other").text
    for role in ("org:other", "caller:finance-bot"):
        assert live.post(path, role, {}).status_code == 403, role
    assert live.post(path, "org:acme", {}, csrf=False).status_code == 403
    assert live.post(path, "org:acme", {"csrf": "0" * 64}, csrf=False).status_code == 403
    cross = live.request(
        "POST",
        path,
        headers={**live.headers("org:acme"), "origin": "https://evil.example"},
        data={"csrf": _csrf(live, "org:acme")},
    )
    assert cross.status_code == 403
    signed_out = live.request("POST", path, data={})
    assert signed_out.status_code == 401
    assert live.store.evals.get(run).status == "running" and _spent(live.store) == 1
    # The operator still cancels any eval.
    assert live.post(path, "operator", {}).status_code == 303
    assert live.store.evals.get(run).status == "cancelled"


def _csrf(live: Console, role: str) -> str:
    from gateway.console._web import csrf_token

    return csrf_token(live.cookie(role))
