"""An org starts an eval of its own agent from the agent's page (docs/console.md, "Org
pages"): the holdout budget each suite has left and when it renews, the plan with its
worst case, then *Confirm*; as POST /v1/evals, which admits an org on its own agents
only. Another org, a caller, a form without its CSRF token: refused, and nothing starts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from records import Store
from tests.gateway.console._inproc import Console
from tests.gateway.console._runs import run_triage, triage_console
from tests.gateway.server._gateway import register_triage

TRIAGE = "acme/ticket-triage"
PAGE = f"/ui/agents/{TRIAGE}/eval"


@pytest.fixture
def live(sqlite_store: Store, tmp_path: Path) -> Iterator[Console]:
    with triage_console(sqlite_store, tmp_path) as built:
        yield built


def _evals(store: Store) -> list[str]:
    return [e.id for e in store.evals.list(agent_id=TRIAGE, limit=100).items]


def test_an_org_plans_and_starts_an_eval_of_its_own_agent(live: Console, tmp_path: Path) -> None:
    run_triage(live.store, tmp_path / "home")  # one of its 3 holdout-revealing evals spent
    before = _evals(live.store)
    agent_page = live.get(f"/ui/agents/{TRIAGE}", "org:acme").text
    assert f'href="{PAGE}"' in agent_page
    form = live.get(PAGE, "org:acme")
    assert form.status_code == 200 and "2 of 3" in form.text
    planned = live.post(f"{PAGE}/plan", "org:acme", {"suites": "", "max_cost_usd": "5"})
    assert planned.status_code == 200 and "Confirm: start this eval" in planned.text
    assert _evals(live.store) == before  # a plan starts nothing
    started = live.post(f"{PAGE}/start", "org:acme", {"suites": "", "max_cost_usd": "5"})
    assert started.status_code == 303
    (new,) = set(_evals(live.store)) - set(before)
    assert started.headers["location"] == f"/ui/evals/{new}"
    over = live.post(f"{PAGE}/plan", "org:acme", {"max_cost_usd": "0"})
    assert over.status_code >= 400 and over.status_code < 500


def test_another_org_a_caller_and_a_forged_form_start_nothing(live: Console) -> None:
    register_triage(live.store, "other/ticket-triage")
    before = _evals(live.store)
    for role in ("org:other", "caller:finance-bot"):
        assert live.get(PAGE, role).status_code == 403, role
        assert live.post(f"{PAGE}/plan", role, {}).status_code == 403, role
        assert live.post(f"{PAGE}/start", role, {}).status_code == 403, role
    assert live.post(f"{PAGE}/start", "org:acme", {}, csrf=False).status_code == 403
    assert _evals(live.store) == before


def test_the_api_admits_an_org_on_its_own_agents_only(live: Console) -> None:
    register_triage(live.store, "other/ticket-triage")

    def start(role: str, agent: str) -> int:
        _, token = live.store.tokens.create(role)
        body = {"agent": agent, "dry_run": True}
        headers = {"authorization": f"Bearer {token}"}
        return live.request("POST", "/v1/evals", json=body, headers=headers).status_code

    assert start("org:acme", TRIAGE) == 200
    assert start("org:other", TRIAGE) == 403
    assert start("caller:finance-bot", TRIAGE) == 403
    assert start("operator", "other/ticket-triage") == 200


def test_an_org_reads_its_started_eval_as_an_author(live: Console) -> None:
    """What POST /v1/evals answers an org is the author's view, as every other read of an
    eval (docs/integrity.md): suite digests keyed, no plan digest, the public split's
    counts. The operator's answer to the same request carries the plain digests."""

    def start(role: str, dry_run: bool) -> dict[str, Any]:
        _, token = live.store.tokens.create(role)
        body = {"agent": TRIAGE, "dry_run": dry_run, "pace_s": 5}
        headers = {"authorization": f"Bearer {token}"}
        answer = live.request("POST", "/v1/evals", json=body, headers=headers)
        assert answer.status_code == (200 if dry_run else 201), answer.text
        view: dict[str, Any] = answer.json()
        return view

    operator = start("operator", dry_run=True)["plan"]["suites"][0]
    assert not operator["suite_digest"].startswith("hmac-sha256:")
    org = start("org:acme", dry_run=False)
    assert org["plan"]["suites"][0]["suite_digest"].startswith("hmac-sha256:")
    assert org["plan"]["suites"][0]["suite_digest"] != operator["suite_digest"]
    assert "plan_digest" not in org["eval"]
    assert "holdout_epoch" not in json.dumps(org) and "instance_set" not in json.dumps(org)
    cancelled = live.request(
        "POST",
        f"/v1/evals/{org['eval']['id']}/cancel",
        headers={"authorization": f"Bearer {live.store.tokens.create('operator')[1]}"},
    )
    assert cancelled.status_code == 200, cancelled.text


def test_an_org_runs_a_bounded_number_of_evals_at_once(live: Console) -> None:
    """An org cannot queue evals of its agents without end (each takes worker time): while
    ORG_RUNNING_EVALS of them run, whoever started them, the org's next is refused until
    one ends; a plan (dry run) is not, nor is an operator."""
    from gateway.operations._evals import ORG_RUNNING_EVALS

    def start(role: str, dry_run: bool = False) -> Any:
        _, token = live.store.tokens.create(role)
        body = {"agent": TRIAGE, "dry_run": dry_run, "pace_s": 30}
        headers = {"authorization": f"Bearer {token}"}
        return live.request("POST", "/v1/evals", json=body, headers=headers)

    started = [start("org:acme") for _ in range(ORG_RUNNING_EVALS)]
    assert [s.status_code for s in started] == [201] * ORG_RUNNING_EVALS
    refused = start("org:acme")
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["details"]["limit"] == ORG_RUNNING_EVALS
    assert start("org:acme", dry_run=True).status_code == 200
    operator = start("operator")
    assert operator.status_code == 201
    for s in started[:2]:  # two end: the operator's still counts, one place is free
        live.store.evals.cancel(s.json()["eval"]["id"])
    again = start("org:acme")
    assert again.status_code == 201, again.text
    for s in (*started[2:], operator, again):
        live.store.evals.cancel(s.json()["eval"]["id"])
