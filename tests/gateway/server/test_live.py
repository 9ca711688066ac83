"""The gateway's whole path: register, eval, grant, call; a denial below the minimum; 401."""

from __future__ import annotations

from pathlib import Path

import pytest

from records import Store
from tests.gateway.server._gateway import (
    install_tiny,
    mandate,
    register_triage,
    running_gateway,
)

pytestmark = pytest.mark.slow


def test_register_eval_grant_and_call(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path, holdout_wrong=3)
    register_triage(store)
    with running_gateway(store, tmp_path / "home") as gw:
        assert gw.call("GET", "/v1/agents").status_code == 401

        done = gw.evaluate("acme/ticket-triage")
        score = done["record"]["eval_score"]
        assert score == 0.5  # 3 of 6 holdout cases expect a label nobody gives

        granted = gw.call("POST", "/v1/mandates", "operator", json=mandate(min_eval_score=0.4))
        assert granted.status_code == 201, granted.text

        body = {"capability": "ticket.classify", "input": {"subject": "Refund", "body": "x"}}
        ok = gw.call(
            "POST", "/v1/agents/acme/ticket-triage/invoke", "caller:finance-bot", json=body
        )
        assert ok.status_code == 200, ok.text
        answer = ok.json()
        assert answer["agent"] == "acme/ticket-triage" and answer["mandate"] == "finance-tickets"
        assert set(answer) >= {
            "output",
            "usage",
            "cost_usd",
            "cost_source",
            "agent_version",
            "request_id",
            "latency_ms",
        }
        assert answer["output"]["label"] == "billing"

        regranted = gw.call("POST", "/v1/mandates", "operator", json=mandate(min_eval_score=0.9))
        assert regranted.status_code == 200 and regranted.json()["status"] == "updated"
        denied = gw.call(
            "POST", "/v1/agents/acme/ticket-triage/invoke", "caller:finance-bot", json=body
        )
        assert denied.status_code == 403, denied.text
        error = denied.json()["error"]
        assert error["code"] == "eval_score_below_minimum"
        assert error["details"]["eval_score"] == 0.5
        assert error["details"]["min_eval_score"] == 0.9

        rows = gw.call("GET", "/v1/ledger", "caller:finance-bot").json()["items"]
        assert [r["decision"] for r in rows] == ["deny", "allow"]
        assert rows[1]["status"] == "settled" and rows[1]["cost_usd"] == answer["cost_usd"]
        assert rows[0]["reason"] == "eval_score_below_minimum"
