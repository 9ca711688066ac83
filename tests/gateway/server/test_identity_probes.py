"""Identity probes that act, against real agents over 127.0.0.1 whose answers change.

A probe finding another version makes the record stale at once on every
gateway process sharing the store (mandates deny `eval_stale`), a later right
answer does not clear it, a new eval does; a claimed capability the agent
stops advertising is refused live and its eval is refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from evals.suites import install_suite
from records import Store
from tests.evals.suites._make import case, make_suite
from tests.gateway.server._agent import Recording, serving_recorder
from tests.gateway.server._gateway import Gateway, mandate, running_gateway

pytestmark = pytest.mark.slow

AGENT = "acme/drifter"
BODY = {"capability": "ticket.classify", "input": {"subject": "Refund", "body": "x"}}
PROBES = {"HOLON_PROBE_INTERVAL_S": "1"}


def _install(store: Store, root: Path) -> None:
    """A suite the recording agent (it always says billing) passes in full."""
    public = [case(f"p{i}", f"Refund {i}", "billing") for i in range(3)]
    holdout = [case(f"h{i}", f"Refund please {i}", "billing") for i in range(3)]
    install_suite(store, make_suite(root, public=public, holdout=holdout))


def _invoke(gw: Gateway) -> httpx.Response:
    return gw.call("POST", f"/v1/agents/{AGENT}/invoke", "caller:finance-bot", json=BODY)


def _until(what: Callable[[], httpx.Response], ok: Callable[[httpx.Response], bool]) -> Any:
    deadline = time.monotonic() + 30
    while True:
        answer = what()
        if ok(answer) or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def _code(answer: httpx.Response) -> str | None:
    if answer.status_code == 200:
        return None
    return str(answer.json()["error"]["code"])


def test_a_version_mismatch_stales_the_record_on_every_process(
    store: Store, tmp_path: Path
) -> None:
    _install(store, tmp_path)
    recording = Recording()
    with serving_recorder(store, AGENT, recording):
        with (
            running_gateway(store, tmp_path / "a", PROBES) as gw,
            # Another gateway process on the same store, with the default lookup
            # cache: it sees what the first one's probe found within its TTL.
            running_gateway(store, tmp_path / "b", eval_workers=0, cache_ttl_s=1.0) as other,
        ):
            done = gw.evaluate(AGENT)
            assert done["record"]["eval_score"] == 1
            granted = gw.call("POST", "/v1/mandates", "operator", json=mandate(min_eval_score=0.5))
            assert granted.status_code == 201, granted.text
            assert _invoke(gw).status_code == 200
            assert _invoke(other).status_code == 200

            recording.answers_version = "6.6.6"  # another agent now answers the probe
            denied = _until(lambda: _invoke(gw), lambda r: r.status_code == 403)
            assert _code(denied) == "eval_stale", denied.text
            (reason,) = denied.json()["error"]["details"]["stale_reasons"]
            assert "identity probe at" in reason and "'6.6.6'" in reason
            seen = _until(lambda: _invoke(other), lambda r: r.status_code == 403)
            assert _code(seen) == "eval_stale"
            record = gw.call("GET", f"/v1/records/{AGENT}", "operator").json()
            assert record["stale"] is True and "'6.6.6'" in record["stale_reasons"][0]

            # It answers right again, probe after probe: the record stays stale.
            recording.answers_version = None
            probes = recording.probes
            _until(lambda: _invoke(gw), lambda r: recording.probes >= probes + 2)
            assert recording.probes >= probes + 2
            assert _code(_invoke(gw)) == "eval_stale"
            assert _code(_invoke(other)) == "eval_stale"

            again = gw.evaluate(AGENT)  # evaluated again: its own probe must pass
            assert again["record"]["eval_score"] == 1
            assert _invoke(gw).status_code == 200
            back = _until(lambda: _invoke(other), lambda r: r.status_code == 200)
            assert back.status_code == 200, back.text
            rows = gw.call("GET", "/v1/ledger", "operator").json()["items"]
            assert "eval_stale" in {r.get("reason") for r in rows}


def test_an_agent_alternating_its_answers_stays_stale(store: Store, tmp_path: Path) -> None:
    _install(store, tmp_path)
    recording = Recording()
    with serving_recorder(store, AGENT, recording):
        with running_gateway(store, tmp_path / "eval") as gw:
            gw.evaluate(AGENT)  # honest while it is evaluated
            granted = gw.call("POST", "/v1/mandates", "operator", json=mandate(min_eval_score=0.5))
            assert granted.status_code == 201, granted.text
            assert _invoke(gw).status_code == 200
        # Then right on every other probe: one wrong answer is enough, and the right
        # ones after it never bring the record back.
        recording.answers_cycle = [None, "6.6.6"]
        recording.probes = 0
        with running_gateway(store, tmp_path / "probing", PROBES, eval_workers=0) as gw:
            first = _until(lambda: _invoke(gw), lambda r: r.status_code == 403)
            assert _code(first) == "eval_stale", first.text
            seen = recording.probes
            codes = set()
            deadline = time.monotonic() + 30
            while recording.probes < seen + 3 and time.monotonic() < deadline:
                codes.add(_code(_invoke(gw)))  # between right and wrong answers alike
                time.sleep(0.05)
            assert recording.probes >= seen + 3
            assert codes == {"eval_stale"}


def test_a_capability_it_stops_advertising_is_refused(store: Store, tmp_path: Path) -> None:
    recording = Recording()
    with serving_recorder(store, AGENT, recording):
        with running_gateway(store, tmp_path / "home", PROBES, eval_workers=0) as gw:
            # No record needed: the refusal is the agent's own word, whatever the mandate.
            assert gw.call("POST", "/v1/mandates", "operator", json=mandate()).status_code == 201
            assert _invoke(gw).status_code == 200

            recording.advertises = ["foo.bar"]
            denied = _until(lambda: _invoke(gw), lambda r: r.status_code == 403)
            assert _code(denied) == "capability_not_advertised", denied.text
            details = denied.json()["error"]["details"]
            assert details["capability"] == "ticket.classify" and details["agent"] == AGENT
            calls = len(recording.calls)
            assert _code(_invoke(gw)) == "capability_not_advertised"
            assert len(recording.calls) == calls  # refused before the agent is called
            routed = gw.call(
                "POST", "/v1/capabilities/ticket.classify/invoke", "caller:finance-bot", json=BODY
            )
            assert routed.status_code == 403 and _code(routed) == "capability_not_advertised"
            metrics = gw.call("GET", "/metrics", "operator").text
            assert f'holon_agent_probes_total{{agent="{AGENT}",result="not_advertised"}}' in metrics

            # A document without `capabilities` denies nothing: calls go again.
            recording.advertises = None
            allowed = _until(lambda: _invoke(gw), lambda r: r.status_code == 200)
            assert allowed.status_code == 200, allowed.text


def test_an_eval_of_an_unadvertised_claim_is_refused(store: Store, tmp_path: Path) -> None:
    _install(store, tmp_path)
    recording = Recording(advertises=["foo.bar"])
    with serving_recorder(store, AGENT, recording):
        with running_gateway(store, tmp_path / "home") as gw:
            started = gw.call("POST", "/v1/evals", "operator", json={"agent": AGENT})
            assert started.status_code == 409, started.text
            error = started.json()["error"]
            assert error["code"] == "identity_mismatch"
            assert error["details"]["not_advertised"] == ["ticket.classify"]
            assert gw.call("GET", "/v1/evals", "operator").json()["items"] == []
            assert not recording.calls  # no case was sent
            found = store.identities.get(AGENT, "1.0.0")
            assert found is not None and found.not_advertised == ("ticket.classify",)
