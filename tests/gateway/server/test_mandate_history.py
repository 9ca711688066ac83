"""Mandate history through a real gateway: every revision kept with its granting token, and
each ledger row naming the revision and the record (eval) that decided it."""

from __future__ import annotations

from pathlib import Path

import pytest

from records import Store
from tests.gateway.server._gateway import (
    install_tiny,
    mandate,
    register_triage,
    running_gateway,
    statements,
)

pytestmark = pytest.mark.slow

BODY = {"capability": "ticket.classify", "input": {"subject": "Refund", "body": "x"}}
INVOKE = "/v1/agents/acme/ticket-triage/invoke"


def test_ledger_rows_name_the_revision_and_the_record(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path, holdout_wrong=3)
    register_triage(store)
    with running_gateway(store, tmp_path / "home") as gw:
        eval_id = gw.evaluate("acme/ticket-triage")["id"]
        (operator,) = [t.id for t in store.tokens.list() if t.role == "operator"]

        def call(status: int) -> None:
            answer = gw.call("POST", INVOKE, "caller:finance-bot", json=BODY)
            assert answer.status_code == status, answer.text

        assert gw.call("POST", "/v1/mandates", "operator", json=mandate()).status_code == 201
        call(200)  # revision 1 reads no record
        regrant = mandate(min_eval_score=0.4)
        assert gw.call("POST", "/v1/mandates", "operator", json=regrant).status_code == 200
        call(200)  # revision 2 reads the record of the eval
        strict = mandate(min_eval_score=0.9)
        assert gw.call("POST", "/v1/mandates", "operator", json=strict).status_code == 200
        call(403)  # revision 3 denies on that record's score
        gw.token("caller:stranger")
        stranger = gw.call("POST", INVOKE, "caller:stranger", json=BODY)  # holds no mandate
        assert stranger.status_code == 403

        rows = gw.call("GET", "/v1/ledger", "operator").json()["items"]
        named = [
            (r["caller"], r["decision"], r["mandate"], r["mandate_revision"], r["record_eval_id"])
            for r in reversed(rows)
        ]
        assert named == [
            ("finance-bot", "allow", "finance-tickets", 1, None),
            ("finance-bot", "allow", "finance-tickets", 2, eval_id),
            ("finance-bot", "deny", "finance-tickets", 3, eval_id),
            ("stranger", "deny", None, None, None),
        ]

        revisions = gw.call("GET", "/v1/mandates/finance-tickets/revisions", "operator")
        assert revisions.status_code == 200
        items = revisions.json()["items"]
        assert [(r["revision"], r["granted_by"]) for r in items] == [
            (1, operator),
            (2, operator),
            (3, operator),
        ]
        assert [r["mandate"].get("min_eval_score") for r in items] == [None, 0.4, 0.9]
        assert items[0]["granted_at"] <= items[1]["granted_at"] <= items[2]["granted_at"]
        # Its holder may read them too; another caller learns nothing, an org may not ask.
        held = gw.call("GET", "/v1/mandates/finance-tickets/revisions", "caller:finance-bot")
        assert held.status_code == 200 and held.json() == revisions.json()
        other = gw.call("GET", "/v1/mandates/finance-tickets/revisions", "caller:stranger")
        missing = gw.call("GET", "/v1/mandates/no-such/revisions", "caller:stranger")
        assert other.status_code == missing.status_code == 404
        assert other.json()["error"]["message"] == "no mandate 'finance-tickets'"
        org = gw.call("GET", "/v1/mandates/finance-tickets/revisions", "org:acme")
        assert org.status_code == 403


def test_naming_the_revision_reads_nothing_more(store: Store, tmp_path: Path) -> None:
    """With the lookups cached, a live call reads no mandate, revision or record: the
    revision and the eval id come with what the decision already holds."""
    install_tiny(store, tmp_path)
    register_triage(store)
    with running_gateway(store, tmp_path / "home", cache_ttl_s=60.0) as gw:
        eval_id = gw.evaluate("acme/ticket-triage")["id"]
        granted = gw.call("POST", "/v1/mandates", "operator", json=mandate(min_eval_score=0.1))
        assert granted.status_code == 201
        warm = gw.call("POST", INVOKE, "caller:finance-bot", json=BODY)
        assert warm.status_code == 200, warm.text
        tables = ("mandates", "mandate_revisions", "agent_records", "agents", "tokens")
        with statements(store, lambda sql: any(f" {t}" in sql.lower() for t in tables)) as seen:
            for _ in range(5):
                answer = gw.call("POST", INVOKE, "caller:finance-bot", json=BODY)
                assert answer.status_code == 200, answer.text
        assert [s for s in seen if not s.lstrip().upper().startswith("UPDATE TOKENS")] == []
        rows = store.ledger.list(limit=10).items
        assert {(r.mandate_revision, r.record_eval_id) for r in rows} == {(1, eval_id)}
