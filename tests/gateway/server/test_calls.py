"""Live calls through a real gateway: budgets under concurrency, routing, failures, identity."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from records import Store, period_key, utcnow
from tests._servers import serve
from tests.gateway.server._agent import Recording, manifest, recording_agent, serving_recorder
from tests.gateway.server._doors import priced_gateway
from tests.gateway.server._gateway import (
    Gateway,
    install_tiny,
    mandate,
    register_triage,
    running_gateway,
)

pytestmark = pytest.mark.slow

BODY = {"capability": "ticket.classify", "input": {"subject": "Refund please", "body": "x"}}


async def _fire(gw: Gateway, path: str, n: int) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {gw.tokens['caller:finance-bot']}"}
    limits = httpx.Limits(max_connections=n)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        return await asyncio.gather(
            *(client.post(gw.url + path, json=BODY, headers=headers) for _ in range(n))
        )


def test_fifty_concurrent_calls_at_a_budget_for_ten(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    # Priced at exactly the cap, so settling frees nothing: the budget affords ten, ever.
    register_triage(
        store,
        "acme/priced",
        pricing={"per_call_usd": "0.01"},
        limits={"max_cost_usd": "0.01", "timeout_s": 5},
    )
    store.mandates.grant(
        mandate(max_cost_per_call_usd="0.01", budget={"amount_usd": "0.10", "period": "month"})
    )
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        responses = asyncio.run(_fire(gw, "/v1/agents/acme/priced/invoke", 50))
    statuses = Counter(r.status_code for r in responses)
    assert statuses == {200: 10, 402: 40}, statuses
    denied = [r.json()["error"] for r in responses if r.status_code == 402]
    assert {e["code"] for e in denied} == {"budget_exhausted"}
    assert all(Decimal(e["details"]["budget_usd"]) == Decimal("0.10") for e in denied)
    rows = store.ledger.list(limit=100).items
    assert Counter((r.decision, r.status) for r in rows) == {
        ("allow", "settled"): 10,
        ("deny", "denied"): 40,
    }
    spent, reserved = store.ledger.budget("finance-tickets", period_key("month", utcnow()))
    assert (spent, reserved) == (Decimal("0.10"), Decimal(0))


def test_an_answered_call_reads_settled_at_once(store: Store, tmp_path: Path) -> None:
    """The gateway answers before its settlement commits; its own ledger and budget
    reads wait for it, and the answer's cost is what the row is charged."""
    budget = {"amount_usd": "1", "period": "month"}
    with priced_gateway(store, tmp_path, "0.004", budget=budget) as gw:
        headers = {"Authorization": f"Bearer {gw.tokens['caller:finance-bot']}"}
        with httpx.Client(base_url=gw.url, headers=headers, timeout=30) as client:
            for _ in range(5):
                answer = client.post("/v1/agents/acme/priced/invoke", json=BODY)
                assert answer.status_code == 200, answer.text
                rows = client.get("/v1/ledger").json()["items"]
                mine = [r for r in rows if r["request_id"] == answer.json()["request_id"]]
                assert [(r["status"], r["cost_usd"]) for r in mine] == [
                    ("settled", answer.json()["cost_usd"])
                ]
            check = client.post(
                "/v1/mandates/finance-tickets/check",
                json={"agent": "acme/priced", "capability": "ticket.classify"},
                headers={"Authorization": f"Bearer {gw.tokens['operator']}"},
            )
    assert check.status_code == 200, check.text
    budget = check.json()["budget"]
    assert (Decimal(budget["spent_usd"]), Decimal(budget["reserved_usd"])) == (
        Decimal("0.020"),
        Decimal(0),
    )


def _serve_recorder(agent_id: str, recording: Recording) -> Any:
    return serve(recording_agent(agent_id, "1.0.0", recording))


def test_routing_picks_the_best_allowed_agent_and_falls_back(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    cheap, dear = Recording(), Recording()
    with (
        _serve_recorder("acme/cheap", cheap) as cheap_url,
        _serve_recorder("acme/dear", dear) as dear_url,
    ):
        store.agents.register(manifest("acme/cheap", cheap_url, pricing={"per_call_usd": "0"}))
        store.agents.register(manifest("acme/dear", dear_url))
        store.agents.register(manifest("acme/a-dead", "http://127.0.0.1:9", pricing={}))
        store.mandates.grant(mandate(agents=["acme/*"]))
        with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
            routed = gw.call(
                "POST", "/v1/capabilities/ticket.classify/invoke", "caller:finance-bot", json=BODY
            )
            assert routed.status_code == 200, routed.text
            answer = routed.json()
            # No records, equal prices: by id, a-dead first, then cheap.
            assert answer["agent"] == "acme/cheap"
            assert answer["routing"]["tried"] == [
                {"agent": "acme/a-dead", "outcome": "unreachable"}
            ]
            assert len(cheap.calls) == 1 and not dear.calls

            store.mandates.grant(mandate(agents=["acme/dear"]))
            routed = gw.call(
                "POST", "/v1/capabilities/ticket.classify/invoke", "caller:finance-bot", json=BODY
            )
            assert routed.json()["agent"] == "acme/dear"

            nobody = gw.call(
                "POST",
                "/v1/capabilities/invoice.extract/invoke",
                "caller:finance-bot",
                json={**BODY, "capability": None},
            )
            assert nobody.status_code == 404


def test_agent_failures_map_to_502_and_504(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    recording = Recording()
    with serving_recorder(store, "acme/flaky", recording):
        store.mandates.grant(mandate(timeout_s=1))
        with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
            recording.behaviour = "error"
            failed = gw.call(
                "POST", "/v1/agents/acme/flaky/invoke", "caller:finance-bot", json=BODY
            )
            assert failed.status_code == 502
            assert failed.json()["error"]["code"] == "agent_error"
            recording.behaviour = "slow"
            slow = gw.call("POST", "/v1/agents/acme/flaky/invoke", "caller:finance-bot", json=BODY)
            assert slow.status_code == 504 and slow.json()["error"]["code"] == "timeout"
            unclaimed = gw.call(
                "POST",
                "/v1/agents/acme/flaky/invoke",
                "caller:finance-bot",
                json={**BODY, "capability": "invoice.extract"},
            )
            assert unclaimed.status_code == 422
            assert unclaimed.json()["error"]["code"] == "capability_not_claimed"
            gw.token("caller:someone-else")
            nobody = gw.call(
                "POST", "/v1/agents/acme/flaky/invoke", "caller:someone-else", json=BODY
            )
            assert nobody.status_code == 403  # holds no mandate
            assert nobody.json()["error"]["code"] == "no_mandate"
    outcomes = Counter((r.decision, r.outcome_code) for r in store.ledger.list().items)
    assert outcomes == {("allow", "agent_error"): 1, ("allow", "timeout"): 1, ("deny", None): 1}


def test_private_addresses_are_refused_unless_allowed(store: Store, tmp_path: Path) -> None:
    from gateway.server import create_app
    from gateway.settings import Settings

    recording = Recording()
    with serving_recorder(store, "acme/local", recording):
        store.mandates.grant(mandate())
        caller = store.tokens.create("caller:finance-bot")[1]
        org = store.tokens.create("org:acme")[1]
        settings = Settings.from_env({"HOLON_HOME": str(tmp_path / "home")})
        assert settings.agent_networks == "public"
        with serve(create_app(settings, store=store, eval_workers=0)) as gateway_url:
            call = httpx.post(
                gateway_url + "/v1/agents/acme/local/invoke",
                json=BODY,
                headers={"Authorization": f"Bearer {caller}"},
            )
            assert call.status_code == 409, call.text
            assert "HOLON_AGENT_NETWORKS" in call.text
            register = httpx.post(
                gateway_url + "/v1/agents",
                json=manifest("acme/other", "http://169.254.169.254"),
                headers={"Authorization": f"Bearer {org}"},
            )
            assert register.status_code == 409 and "169.254.169.254" in register.text
    assert not recording.calls
    (row,) = store.ledger.list().items
    assert row.status == "settled" and row.outcome_code == "refused" and row.cost_usd == 0


def _without_request_id(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    # The request id and the trace context are each call's own.
    return [(k, v) for k, v in headers if k.lower() not in (b"holon-request-id", b"traceparent")]


TRACEPARENT = re.compile(r"00-([0-9a-f]{32})-([0-9a-f]{16})-00")


def test_the_agent_cannot_tell_an_eval_call_from_a_live_one(store: Store, tmp_path: Path) -> None:
    from tests.evals.suites._make import case, make_suite

    the_case = case("p0", "Refund please", "billing")
    install_suite_dir = make_suite(tmp_path, public=[the_case], holdout=[{**the_case, "id": "h0"}])
    from evals.suites import install_suite

    install_suite(store, install_suite_dir)
    recording = Recording()
    with serving_recorder(store, "acme/recorder", recording):
        store.agents.set_secret("acme/recorder", "s3cret-value")
        store.mandates.grant(mandate(max_cost_per_call_usd="0.03", timeout_s=9))
        with running_gateway(store, tmp_path / "home") as gw:
            gw.evaluate("acme/recorder")
            eval_calls = list(recording.calls)
            caller_trace = "0af7651916cd43dd8448eb211c80319c"
            for traceparent in (
                None,  # no caller trace
                f"00-{caller_trace}-b7ad6b7169203331-01",  # a caller's trace, continued
                f"00-{caller_trace}-b7ad6b7169203331-01-more",  # malformed: ignored
            ):
                live = gw.call(
                    "POST",
                    "/v1/agents/acme/recorder/invoke",
                    "caller:finance-bot",
                    json={"capability": "ticket.classify", "input": the_case["input"]},
                    headers={} if traceparent is None else {"traceparent": traceparent},
                )
                assert live.status_code == 200, live.text
    assert len(eval_calls) == 2  # the public case and its holdout twin
    live_calls = recording.calls[-3:]
    live_headers, live_body = live_calls[0]
    eval_headers, eval_body = eval_calls[0]
    assert live_body == eval_body
    assert _without_request_id(live_headers) == _without_request_id(eval_headers)
    # Tracing is off here: every call still carries one traceparent of one shape, in
    # the same place among the same headers, live or eval, a caller's trace or not.
    for headers, _ in (*live_calls, *eval_calls):
        assert [k for k, _ in headers] == [k for k, _ in eval_headers]
        (value,) = [v.decode() for k, v in headers if k == b"traceparent"]
        assert TRACEPARENT.fullmatch(value), value
    sent = [dict(headers)[b"traceparent"].decode() for headers, _ in (*live_calls, *eval_calls)]
    assert len(set(sent)) == len(sent)
    fresh, continued, ignored = (TRACEPARENT.fullmatch(v) for v in sent[:3])
    assert continued is not None and continued[1] == caller_trace  # the caller's trace goes on
    assert continued[2] != "b7ad6b7169203331"  # under a parent id of the gateway's own
    assert fresh is not None and ignored is not None
    assert caller_trace not in (fresh[1], ignored[1])  # the malformed one was not taken
    received = {k.decode(): v.decode() for k, v in live_headers}
    assert received["authorization"] == "Bearer s3cret-value"
    assert received["holon-max-cost-usd"] == "0.01"  # the agent's own limit, not a cap
    assert received["holon-deadline-ms"] == "5000"
