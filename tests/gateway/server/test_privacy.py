"""Holdout data never reaches an agent author through the API; tokens and secrets never logged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from records import Store
from tests.gateway.server._gateway import install_tiny, mandate, register_triage, running_gateway

pytestmark = pytest.mark.slow

HOLDOUT_TEXT = "Refund please"  # every holdout input of the tiny suite says it; no public one
# The holdout's case ids (the operator's report lists holdout cases by id).
HOLDOUT_IDS = [f'"h{i}"' for i in range(6)]


@pytest.mark.parametrize("pool", [False, True], ids=["file", "pool"])
def test_author_facing_routes_never_show_the_holdout(
    store: Store, tmp_path: Path, caplog: pytest.LogCaptureFixture, pool: bool
) -> None:
    """A stored holdout, and the same file as a pool of subsets of 2 (docs/integrity.md):
    nothing of any subset, and not the epochs a pool has left (they tell the epoch)."""
    from tests.integrity.test_pool import pool_yaml

    caplog.set_level(logging.DEBUG)
    install_tiny(store, tmp_path, suite_yaml=pool_yaml(2) if pool else None)
    if pool:
        store.suites.rotate_holdout("tiny")  # epoch 1: a subset that is not the first
    register_triage(store)
    store.agents.set_secret("acme/ticket-triage", "agent-secret-value-123")
    store.mandates.grant(mandate())
    with running_gateway(store, tmp_path / "home") as gw:
        done = gw.evaluate("acme/ticket-triage")
        eval_id = done["id"]
        gw.call(
            "POST",
            "/v1/agents/acme/ticket-triage/invoke",
            "caller:finance-bot",
            json={"capability": "ticket.classify", "input": {"subject": "Hi", "body": "x"}},
        )
        author_views = {
            (role, path): gw.call("GET", path, role)
            for role in ("org:acme", "caller:finance-bot")
            for path in (
                "/v1/suites",
                "/v1/suites/tiny",
                "/v1/suites/tiny/cases",
                "/v1/suites/tiny/files",
                "/v1/agents/acme/ticket-triage",
                "/v1/records/acme/ticket-triage",
                f"/v1/evals/{eval_id}",
                f"/v1/evals/{eval_id}/report?format=json",
                f"/v1/evals/{eval_id}/report?format=md",
                f"/v1/evals/{eval_id}/report?format=html",
                f"/v1/evals/{eval_id}/compare/{eval_id}?format=json",
                "/v1/ledger",
            )
        }
        operator_report = gw.call(
            "GET", f"/v1/evals/{eval_id}/report?audience=operator", "operator"
        )
        refused = gw.call("GET", f"/v1/evals/{eval_id}/report?audience=operator", "org:acme")
        operator_suite = gw.call("GET", "/v1/suites/tiny", "operator").json()
        tokens = list(gw.tokens.values())

    readable = {key for key, r in author_views.items() if r.status_code == 200}
    # The org reads all but the ledger; the caller its ledger, suites, agents and records.
    assert len(readable) == 11 + 7, sorted(set(author_views) - readable)
    for key, response in author_views.items():
        assert HOLDOUT_TEXT not in response.text, key
        assert not any(case_id in response.text for case_id in HOLDOUT_IDS), key
        assert "holdout_epoch" not in response.text, key
        assert "remaining" not in response.text and "epoch " not in response.text, key
    cases = author_views[("org:acme", "/v1/suites/tiny/cases")].json()
    assert len(cases["public"]) == 6 and cases["holdout"] == {"cases": 2 if pool else 6}
    if pool:
        shown = author_views[("org:acme", "/v1/suites/tiny")].json()["holdout"]
        assert shown == {"cases": 2, "kind": "pool", "pool": {"cases": 6, "epochs": 3}}
        # The operator reads the epochs left, so the check above can fail.
        assert operator_suite["holdout"]["pool"]["remaining"] == 2
    # The operator does see the holdout when asking for it, so the check above can fail.
    assert sum(case_id in operator_report.text for case_id in HOLDOUT_IDS) == (2 if pool else 6)
    assert refused.status_code == 403

    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "agent-secret-value-123" not in logged
    for token in tokens:
        assert token not in logged and token[4:] not in logged
