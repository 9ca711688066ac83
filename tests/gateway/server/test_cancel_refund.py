"""`POST /v1/evals/{eval}/cancel` gives the holdout budget back when no holdout case was
sent and says so in the operator's view; an operator cancels any eval, an org the evals of
its own agents (reading the author's view), no one else any."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from evals import make_plan, start
from records import Store
from tests.gateway.server._gateway import Gateway, install_tiny, register_triage, running_gateway

AGENT = "acme/ticket-triage"


@pytest.fixture
def gw(store: Store, tmp_path: Path) -> Iterator[Gateway]:
    """A gateway with no eval workers: an eval stays as the test leaves it."""
    install_tiny(store, tmp_path)
    register_triage(store)
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gateway:
        yield gateway


def _running(gw: Gateway) -> str:
    plan = make_plan(gw.store, AGENT, home=gw.home)
    assert plan.full and plan.suites[0].holdout
    return start(gw.store, plan).id


def _spent(store: Store) -> tuple[int, int, int]:
    (entry,) = store.exposure.list(suite_id="tiny")
    (instances,) = store.exposure.instance_sets("tiny")
    return entry.spent, entry.revealed, instances.revealed


def test_a_cancel_before_any_holdout_case_refunds_and_says_so(gw: Gateway) -> None:
    run = _running(gw)
    assert _spent(gw.store) == (1, 1, 1)
    cancelled = gw.call("POST", f"/v1/evals/{run}/cancel", "operator")
    assert cancelled.status_code == 200, cancelled.text
    body = cancelled.json()
    assert body["status"] == "cancelled"
    assert body["holdout_budget"] == {"refunded": ["tiny"], "spent": []}
    assert _spent(gw.store) == (0, 0, 0)
    shown = gw.call("GET", f"/v1/evals/{run}", "operator").json()
    assert shown["holdout_budget"] == {"refunded": ["tiny"], "spent": []}
    # The author's view of its own eval does not carry it (it is the operator's).
    assert "holdout_budget" not in gw.call("GET", f"/v1/evals/{run}", "org:acme").json()
    again = gw.call("POST", f"/v1/evals/{run}/cancel", "operator")
    assert again.status_code == 409 and "is cancelled, not running" in again.text
    assert _spent(gw.store) == (0, 0, 0)


def test_a_claimed_holdout_case_keeps_the_budget_spent(gw: Gateway) -> None:
    run = _running(gw)
    cells = gw.store.evals.claim(run, "test-owner", 100, lease_s=60)
    assert "holdout" in {c.split for c in cells}
    body = gw.call("POST", f"/v1/evals/{run}/cancel", "operator").json()
    assert body["holdout_budget"] == {"refunded": [], "spent": ["tiny"]}
    assert _spent(gw.store) == (1, 1, 1)


@pytest.mark.parametrize("role", ["org:other", "caller:finance-bot", None])
def test_no_one_but_an_operator_or_the_agents_org_cancels(gw: Gateway, role: str | None) -> None:
    """Another org must never touch an org's eval; a caller has no evals."""
    run = _running(gw)
    refused = gw.call("POST", f"/v1/evals/{run}/cancel", role)
    assert refused.status_code in (401, 403), refused.text
    assert set(refused.json()) == {"error"}
    assert gw.store.evals.get(run).status == "running"
    assert _spent(gw.store) == (1, 1, 1)


def test_the_agents_org_cancels_under_the_operators_rules(gw: Gateway) -> None:
    """Refunded only when no holdout cell was claimed, as the operator's cancel: an org
    that cancels an eval whose holdout went badly keeps it spent. Its answer is the
    author's view: no plan digest, no holdout_budget (the operator's), public counts."""
    refunded = _running(gw)
    body = gw.call("POST", f"/v1/evals/{refunded}/cancel", "org:acme").json()
    assert body["status"] == "cancelled" and body["progress_of"] == "public"
    assert "plan_digest" not in body and "holdout_budget" not in body
    assert body == gw.call("GET", f"/v1/evals/{refunded}", "org:acme").json()
    assert _spent(gw.store) == (0, 0, 0)
    kept = _running(gw)
    gw.store.evals.claim(kept, "test-owner", 100, lease_s=60)
    assert gw.call("POST", f"/v1/evals/{kept}/cancel", "org:acme").status_code == 200
    assert _spent(gw.store) == (1, 1, 1)
    again = gw.call("POST", f"/v1/evals/{kept}/cancel", "org:acme")
    assert again.status_code == 409 and "is cancelled, not running" in again.text
