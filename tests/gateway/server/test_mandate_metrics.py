"""Calls and spend per mandate (and spend per caller) in /metrics, fed from the ledger
rows each gateway process commits: two processes on one store add up to the ledger."""

from __future__ import annotations

import re
import time
from decimal import Decimal
from pathlib import Path

import pytest

from records import Store
from tests.gateway.server._agent import Recording, serving_recorder
from tests.gateway.server._gateway import Gateway, mandate, running_gateway

pytestmark = pytest.mark.slow

AGENT = "acme/metered"
BODY = {"capability": "ticket.classify", "input": {"subject": "Refund", "body": "x"}}
SAMPLE = re.compile(r"^(holon_(?:mandate|caller)_\w+)\{([^}]*)\} (\S+)$", re.M)


def _samples(gw: Gateway) -> dict[tuple[str, str], Decimal]:
    text = gw.call("GET", "/metrics", "operator").text
    return {(name, labels): Decimal(value) for name, labels, value in SAMPLE.findall(text)}


def _summed(*gateways: Gateway) -> dict[tuple[str, str], Decimal]:
    total: dict[tuple[str, str], Decimal] = {}
    for gw in gateways:
        for key, value in _samples(gw).items():
            total[key] = total.get(key, Decimal(0)) + value
    return total


def test_two_processes_add_up_to_the_ledger(store: Store, tmp_path: Path) -> None:
    recording = Recording()
    with serving_recorder(store, AGENT, recording):
        with (
            running_gateway(store, tmp_path / "a", eval_workers=0) as one,
            running_gateway(store, tmp_path / "b", eval_workers=0) as two,
        ):
            assert one.call("POST", "/v1/mandates", "operator", json=mandate()).status_code == 201
            path = f"/v1/agents/{AGENT}/invoke"
            for gw, n in ((one, 3), (two, 2)):
                for _ in range(n):
                    answer = gw.call("POST", path, "caller:finance-bot", json=BODY)
                    assert answer.status_code == 200, answer.text
            narrowed = mandate(agents=["acme/somebody-else"])
            assert one.call("POST", "/v1/mandates", "operator", json=narrowed).status_code == 200
            for _ in range(4):
                denied = two.call("POST", path, "caller:finance-bot", json=BODY)
                assert denied.json()["error"]["code"] == "agent_not_allowed"
            # No mandate at all: counted by reason, under no mandate.
            one.token("caller:nobody")
            nobody = one.call("POST", path, "caller:nobody", json=BODY)
            assert nobody.json()["error"]["code"] == "no_mandate"

            rows = one.call("GET", "/v1/ledger", "operator").json()["items"]
            charged = sum((Decimal(r["cost_usd"]) for r in rows), Decimal(0))
            assert charged == Decimal("0.005")
            want = {
                ("holon_mandate_calls_total", 'mandate="finance-tickets",decision="allow"'): 5,
                ("holon_mandate_calls_total", 'mandate="finance-tickets",decision="deny"'): 4,
                ("holon_mandate_spend_usd_total", 'mandate="finance-tickets"'): charged,
                ("holon_caller_spend_usd_total", 'caller="finance-bot"'): charged,
            }
            deadline = time.monotonic() + 10
            total = _summed(one, two)
            while total != want and time.monotonic() < deadline:  # settled after answering
                time.sleep(0.05)
                total = _summed(one, two)
            assert total == want
            # Per process, as Prometheus expects of counters: each counts its own calls.
            first = _samples(one)
            allowed = ("holon_mandate_calls_total", 'mandate="finance-tickets",decision="allow"')
            assert first[allowed] == 3
