"""Canaries through a real gateway: the swap of issue 28, on SQLite and PostgreSQL.

An adder certified at about 0.85 (it answers a fixed 15% of sums wrong) is
called live under a `min_eval_score: 0.8` mandate; then, behind the same id,
version and endpoint, it answers every sum off by one. Canaries (a fifth of
live calls) grade it inside its traffic; the drift test decides, the record
says drifted, the certificate is revoked and the mandate denies the agent.
What the agent saw of canaries and live calls is compared on the wire.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from agents import Executor
from gateway.live import Canaries, CanaryPolicy, CanaryResult, Lookups
from records import Store
from tests.gateway.server._adder import (
    AGENT,
    CAPABILITY,
    adder_mandate,
    agent_app,
    serving_adder_world,
)
from tests.gateway.server._gateway import Gateway, running_gateway

CALLER = "caller:finance-bot"
INVOKE = f"/v1/agents/{AGENT}/invoke"
CANARIES_ON = {
    "HOLON_CANARY_SHARE": "0.2",
    "HOLON_CANARY_FLOOR": "0",
    "HOLON_CANARY_CEILING_USD": "100",
}


def _wrong_by_nature(a: float, b: float) -> bool:
    """A fixed 15% of sums the honest adder gets wrong (the same ones every time)."""
    digest = hashlib.sha256(f"{a}+{b}".encode()).digest()
    return digest[0] % 100 < 15


@dataclass
class Seen:
    """What the adder received: each request's header names and body keys, and mode."""

    requests: list[tuple[tuple[str, ...], tuple[str, ...], str]] = field(default_factory=list)
    traceparents: list[str] = field(default_factory=list)
    mode: str = "honest"  # honest | off_by_one | slide (0.65)


def _app(seen: Seen) -> Starlette:
    async def call(request: Request) -> Response:
        body = json.loads(await request.body())
        names = tuple(sorted(h for h in request.headers if h not in ("content-length",)))
        seen.requests.append((names, tuple(sorted(body)), seen.mode))
        seen.traceparents.append(request.headers.get("traceparent", ""))
        a, b = body["input"]["a"], body["input"]["b"]
        right = a + b
        if seen.mode == "off_by_one":
            return JSONResponse({"output": {"sum": right + 1}})
        wrong = _wrong_by_nature(a, b)
        if seen.mode == "slide":
            digest = hashlib.sha256(f"slide {a}+{b}".encode()).digest()
            wrong = digest[0] % 100 < 35
        return JSONResponse({"output": {"sum": right + 1 if wrong else right}})

    return agent_app(call)


@contextmanager
def _certified_world(store: Store, root: Path) -> Iterator[tuple[Seen, str]]:
    """The adder suite with 100 public and 100 holdout cases, the adder served honest."""
    seen = Seen()
    with serving_adder_world(store, root, _app(seen), cases=100) as url:
        yield seen, url


def _call(gw: Gateway, n: int) -> Any:
    return gw.call(
        "POST", INVOKE, CALLER, json={"capability": CAPABILITY, "input": {"a": n, "b": 3}}
    )


@pytest.mark.slow
def test_a_swapped_agent_is_denied_for_drift_and_its_certificate_revoked(
    store: Store, tmp_path: Path
) -> None:
    with (
        _certified_world(store, tmp_path) as (seen, _),
        running_gateway(store, tmp_path / "home", CANARIES_ON) as gw,
    ):
        record = gw.evaluate(AGENT)["record"]
        assert Decimal(str(record["eval_score"])) >= Decimal("0.8"), record
        store.mandates.grant(adder_mandate(min_eval_score=0.8))
        # Honest: 150 live calls, all allowed; canaries graded, no drift.
        for n in range(150):
            assert _call(gw, n).status_code == 200
        honest = gw.call("GET", f"/v1/records/{AGENT}", "operator").json()
        watched = honest["canaries"][CAPABILITY]
        assert watched["graded"] >= 10 and watched["drifted"] is False
        # The swap: every sum off by one, same id, version and endpoint.
        seen.mode = "off_by_one"
        allowed = 0
        for n in range(150, 750):
            answer = _call(gw, n)
            if answer.status_code == 403:
                assert answer.json()["error"]["code"] == "drift_detected"
                break
            assert answer.status_code == 200, answer.text
            allowed += 1
        else:
            raise AssertionError("600 calls after the swap were all allowed")
        assert allowed <= 600
        drifted = gw.call("GET", f"/v1/records/{AGENT}", "operator").json()
        assert drifted["canaries"][CAPABILITY]["drifted"] is True
        score = drifted["live_score"][CAPABILITY]
        assert score["graded"] == drifted["canaries"][CAPABILITY]["graded"]
        assert score["ci95"][0] <= score["score"] <= score["ci95"][1]
        assert score["window"]["graded"] == score["graded"] and score["window_days"] == 7
        author = gw.call("GET", f"/v1/records/{AGENT}", "org:acme").json()
        assert author["canaries"] == {CAPABILITY: {"drifted": True}}
        assert "live_score" not in author
        revocations = gw.call("GET", "/.well-known/holon/revocations.json").json()
        metrics = gw.call("GET", "/metrics", "operator").text
        ledger = gw.call("GET", "/v1/ledger?limit=1000", CALLER).json()["items"]
        runs = gw.call("GET", "/v1/canaries?limit=1000", "operator").json()["items"]
        refused = [
            gw.call("GET", "/v1/canaries", role).status_code for role in (CALLER, "org:acme")
        ]
    # Canaries are the operator's: listed apart, to the operator alone.
    assert refused == [403, 403]
    assert runs and {r["agent"] for r in runs} == {AGENT}
    assert sum(not r["passed"] for r in runs) >= 1
    # The signed revocation list names the record's certificate, revoked for the drift.
    listed = json.loads(base64.b64decode(revocations["payload"]))
    reasons = {r["certificate_id"]: r["reason"] for r in listed["revoked"]}
    assert reasons[record["certificate_id"]].startswith("drift at ")
    assert f'holon_agent_drift{{agent="{AGENT}",capability="{CAPABILITY}"}} 1' in metrics
    # The caller's ledger holds its own calls and nothing else: no canary in it.
    assert len(ledger) == 150 + allowed + 1
    assert all(row["caller"] == "finance-bot" for row in ledger)
    # On the wire, canaries and live calls look alike: one set of header names and body
    # keys for every request the agent got (the eval's cells included).
    assert len({(names, keys) for names, keys, _ in seen.requests}) == 1
    assert all(t.startswith("00-") and len(t) == 55 for t in seen.traceparents)
    print(f"drift denied after {allowed} live calls of the swapped agent")


@pytest.mark.slow
def test_a_slide_to_065_is_found_and_an_honest_agent_never(store: Store, tmp_path: Path) -> None:
    """Canaries sent one after another (no live traffic: the floor's job), real HTTP,
    real grading, the store's drift test: an honest agent over 400 canaries is never
    drifted; the same agent sliding to about 0.65 is found, its delay measured."""
    with _certified_world(store, tmp_path) as (seen, _):
        with running_gateway(store, tmp_path / "home") as gw:
            gw.evaluate(AGENT)
        _slide(store, tmp_path, seen)


def _slide(store: Store, tmp_path: Path, seen: Seen) -> None:
    results: list[CanaryResult] = []

    async def run() -> tuple[int, int | None]:
        async with Executor(allow_asgi=True) as executor:
            canaries = _canaries(store, executor, tmp_path, Decimal(1000), report=results.append)
            honest = 0
            for _ in range(400):
                result = await canaries.send(AGENT, CAPABILITY)
                assert result.sent and not result.drift_decided, result
                honest += 1
            seen.mode = "slide"
            for taken in range(1, 3001):
                result = await canaries.send(AGENT, CAPABILITY)
                if result.drift_decided:
                    return honest, taken
            return honest, None

    import asyncio

    # A ceiling below one case's cap (the suite's 0.01): nothing is sent.
    assert _one_more(store, tmp_path, Decimal("0.005")).reason == "ceiling"
    honest, delay = asyncio.run(run())
    assert honest == 400
    assert delay is not None and delay <= 3000
    after = _one_more(store, tmp_path, Decimal(1000))
    assert after.reason == "drifted" and not after.sent
    print(f"a slide from 0.85 to 0.65 found after {delay} canaries")


def _canaries(
    store: Store, executor: Executor, tmp_path: Path, ceiling: Decimal, **options: Any
) -> Canaries:
    """Canaries sent by hand (no share, no floor), under `ceiling`, fresh lookups each time."""
    return Canaries(
        store,
        executor,
        Lookups(store, ttl_s=0),
        home=tmp_path / "home",
        policy=CanaryPolicy(0, 0, ceiling),
        **options,
    )


def _one_more(store: Store, tmp_path: Path, ceiling: Decimal) -> CanaryResult:
    """One more canary: after a drift not sent (only a new eval clears it)."""
    import asyncio

    async def one() -> CanaryResult:
        async with Executor(allow_asgi=True) as executor:
            return await _canaries(store, executor, tmp_path, ceiling).send(AGENT, CAPABILITY)

    return asyncio.run(one())
