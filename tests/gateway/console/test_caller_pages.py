"""A caller's pages (docs/console.md, "Caller pages"): the agents its mandates cover with
their scores, lower bounds and certificates, an agent's page, and "try a call": the most
it can cost first, then a real live call under its mandates (a ledger row like any
other), its answer escaped. An agent outside its mandates is not found to it, and a
form without its CSRF token calls nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.service import StoreService
from records import Store
from schema.jsontext import dumps
from tests.gateway.console._inproc import Console
from tests.gateway.console._runs import run_triage, triage_console
from tests.gateway.server._gateway import mandate, register_triage

TRIAGE = "acme/ticket-triage"
OTHER = "other/ticket-triage"
CALLER = "caller:finance-bot"
INPUT = dumps({"subject": "Refund", "body": "I was charged twice. <script>x</script>"})


@pytest.fixture
def live(sqlite_store: Store, tmp_path: Path) -> Iterator[Console]:
    with triage_console(sqlite_store, tmp_path) as built:
        register_triage(sqlite_store, OTHER)
        service = StoreService(sqlite_store, tmp_path / "home")
        service.mandates.grant(mandate(agents=[TRIAGE]), source="<test>")
        yield built


def _rows(store: Store) -> int:
    store.ledger.drain()
    return len(store.ledger.list(caller="finance-bot").items)


def test_a_caller_sees_the_agents_its_mandates_cover(live: Console, tmp_path: Path) -> None:
    record = run_triage(live.store, tmp_path / "home")
    page = live.get("/ui/", CALLER)
    assert page.status_code == 200 and f'href="/ui/agents/{TRIAGE}"' in page.text
    assert OTHER not in page.text
    assert f'href="/ui/certificates/{record["certificate_id"]}"' in page.text
    agent = live.get(f"/ui/agents/{TRIAGE}", CALLER)
    assert agent.status_code == 200 and str(record["eval_score"]) in agent.text
    assert "Lower bound" in agent.text and "Try a call" in agent.text
    assert live.get(f"/ui/agents/{OTHER}", CALLER).status_code == 404
    assert live.get(f"/ui/agents/{TRIAGE}", "caller:someone-else").status_code == 404


def test_try_a_call_confirms_then_calls_through_the_live_path(live: Console) -> None:
    path = f"/ui/agents/{TRIAGE}/call"
    fields = {"capability": "ticket.classify", "input": INPUT}
    confirm = live.post(f"{path}/confirm", CALLER, fields)
    assert confirm.status_code == 200 and "costs at most <strong>$0.01</strong>" in confirm.text
    assert _rows(live.store) == 0  # the first step calls nothing
    done = live.post(path, CALLER, fields)
    assert done.status_code == 200, done.text[-2000:]
    assert "Answered by" in done.text and "<script>x" not in done.text
    assert _rows(live.store) == 1


def test_no_call_outside_the_mandate_or_without_csrf(live: Console) -> None:
    fields = {"capability": "ticket.classify", "input": INPUT}
    for agent in (OTHER, "acme/nothing"):
        assert live.post(f"/ui/agents/{agent}/call", CALLER, fields).status_code == 404
    wrong = {"capability": "ticket.other", "input": INPUT}
    assert live.post(f"/ui/agents/{TRIAGE}/call", CALLER, wrong).status_code == 400
    forged = live.post(f"/ui/agents/{TRIAGE}/call", CALLER, fields, csrf=False)
    assert forged.status_code == 403
    for role in ("operator", "org:acme"):
        assert live.post(f"/ui/agents/{TRIAGE}/call", role, fields).status_code == 403
    big = {"capability": "ticket.classify", "input": '"' + "a" * (33 * 1024) + '"'}
    assert live.post(f"/ui/agents/{TRIAGE}/call", CALLER, big).status_code == 400
    bad = {"capability": "ticket.classify", "input": "{not json"}
    assert live.post(f"/ui/agents/{TRIAGE}/call/confirm", CALLER, bad).status_code == 400
    assert _rows(live.store) == 0


def _metric(live: Console, series: str) -> float:
    """One series' value in /metrics (0 when the process has not counted it yet)."""
    _, token = live.store.tokens.create("operator")
    text = live.request("GET", "/metrics", headers={"authorization": f"Bearer {token}"}).text
    for line in text.splitlines():
        if line.startswith(series + " "):
            return float(line.split()[-1])
    return 0.0


def test_a_tried_call_counts_in_metrics_as_an_api_call(live: Console) -> None:
    """The console's call and the API's /invoke go through one counting function: an
    answered call raises the live-call counter by one, a denied one the denial counter
    by its reason, each exactly as the same call over the API does."""
    calls = 'holon_live_calls_total{capability="ticket.classify",outcome="ok"}'
    path = f"/ui/agents/{TRIAGE}/call"
    _, token = live.store.tokens.create(CALLER)

    def api(value: object) -> int:
        body = {"capability": "ticket.classify", "input": value}
        headers = {"authorization": f"Bearer {token}"}
        sent = live.request("POST", f"/v1/agents/{TRIAGE}/invoke", json=body, headers=headers)
        return sent.status_code

    before = _metric(live, calls)
    assert live.post(path, CALLER, {"capability": "ticket.classify", "input": INPUT}).is_success
    assert _metric(live, calls) == before + 1
    assert api({"subject": "Refund", "body": "Charged twice."}) == 200
    assert _metric(live, calls) == before + 2
    # A denial: an input the capability's schema refuses (a ledger row, no call made).
    denied = _metric(live, 'holon_live_denials_total{reason="invalid_input"}')
    tried = live.post(path, CALLER, {"capability": "ticket.classify", "input": '{"x": 1}'})
    assert tried.status_code == 400 and "invalid_input" in tried.text
    assert _metric(live, 'holon_live_denials_total{reason="invalid_input"}') == denied + 1
    assert api({"x": 1}) == 400
    assert _metric(live, 'holon_live_denials_total{reason="invalid_input"}') == denied + 2
    assert _metric(live, calls) == before + 2
