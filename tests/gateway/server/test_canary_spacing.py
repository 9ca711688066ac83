"""Canaries have no period (issue 28: "their spacing is not periodic"), shown from the
agent's own log.

A real gateway with canaries on calls a real loopback adder that logs every
request with its arrival time. The adder was certified through the gateway
(a real eval); live calls add `b = 3`, the suite's holdout cases `b = 2`
(tests/gateway/server/_adder.py, from a = 100), so the log tells a canary
from a live call by its input, as an agent could only by content. What an
agent could count on is what the log shows: where canaries fall among live
calls (the share), and when they come with no traffic at all (the floor).
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from records import Store
from tests.gateway.server._adder import (
    AGENT,
    CAPABILITY,
    adder_mandate,
    agent_app,
    serving_adder_world,
)
from tests.gateway.server._gateway import Gateway, running_gateway

pytestmark = pytest.mark.slow

CALLER = "caller:finance-bot"
INVOKE = f"/v1/agents/{AGENT}/invoke"
HOLDOUT_FROM = 100  # write_adder_suite: the holdout's a = 100 + i, b = 2
LIVE_B = 3


@dataclass(frozen=True)
class Arrival:
    at: float  # time.monotonic() when the request reached the agent
    canary: bool  # a suite case's input (b = 2), not a live call's (b = 3)
    a: float
    wire: tuple[tuple[str, ...], tuple[str, ...]]  # header names, body keys


@dataclass
class AgentLog:
    arrivals: list[Arrival] = field(default_factory=list)

    def since(self, mark: int) -> list[Arrival]:
        return self.arrivals[mark:]


def _adder(log: AgentLog) -> Starlette:
    async def call(request: Request) -> Response:
        at = time.monotonic()
        body = json.loads(await request.body())
        value = body["input"]
        names = tuple(sorted(h for h in request.headers if h != "content-length"))
        wire = (names, tuple(sorted(body)))
        log.arrivals.append(Arrival(at, value["b"] != LIVE_B, value["a"], wire))
        return JSONResponse({"output": {"sum": value["a"] + value["b"]}})

    return agent_app(call)


@contextmanager
def _certified(
    store: Store, root: Path, env: dict[str, str], **options: float
) -> Iterator[tuple[Gateway, AgentLog, int]]:
    """The adder suite (20 public, 20 holdout cases), the honest adder served and logged,
    certified through the gateway (a real eval); the gateway, the log, and where in the
    log the eval's requests end."""
    log = AgentLog()
    with serving_adder_world(store, root, _adder(log), cases=20):
        with running_gateway(store, root / "home", env, **options) as gw:
            gw.evaluate(AGENT)
            mark = len(log.arrivals)
            yield gw, log, mark


def _cv(values: list[float]) -> float:
    """Coefficient of variation: 0 for a period, 1 for a Poisson process's gaps."""
    return statistics.pstdev(values) / statistics.fmean(values)


def test_share_canaries_fall_at_irregular_positions_among_live_calls(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """At share 0.2 (floor 0: every canary is one a live call triggered), 400 live calls
    one after another: how many live calls the agent saw between one canary and the
    next takes many values, as draws of a geometric distribution do (mean 5, CV about
    0.9); a sender with a period would give one value, CV 0."""
    env = {"HOLON_CANARY_SHARE": "0.2", "HOLON_CANARY_FLOOR": "0"}
    env["HOLON_CANARY_CEILING_USD"] = "100"
    with _certified(sqlite_store, tmp_path, env) as (gw, log, mark):
        sqlite_store.mandates.grant(adder_mandate())
        for n in range(400):
            answer = gw.call(
                "POST",
                INVOKE,
                CALLER,
                json={"capability": CAPABILITY, "input": {"a": 1000 + n, "b": LIVE_B}},
            )
            assert answer.status_code == 200, answer.text
        _settle(log)
        arrivals = log.since(mark)
    live = [a for a in arrivals if not a.canary]
    canaries = [a for a in arrivals if a.canary]
    assert len(live) == 400
    assert all(c.a >= HOLDOUT_FROM for c in canaries)  # holdout cases, never public ones
    positions: list[int] = []
    seen_live = 0
    for arrival in arrivals:
        if arrival.canary:
            positions.append(seen_live)
        else:
            seen_live += 1
    gaps = [float(b - a) for a, b in zip(positions, positions[1:], strict=False)]
    # Binomial(400, 0.2): 80 expected, sd 8; outside 40..130 has probability < 1e-6.
    assert 40 <= len(canaries) <= 130, len(canaries)
    # Simulated (20,000 runs of 400 calls at 0.2, the sender's own draws): the gaps' CV
    # was 0.59 at the lowest (median 0.87, sd about 0.07), the distinct gaps 11 at the
    # fewest. 0.5 is over 5 sd below the median: a correct sender fails these bounds with
    # probability under 1e-6. Delivery jitter (a canary reaching the agent a call or two
    # after its trigger) only spreads the gaps further.
    assert len(set(gaps)) >= 6, gaps
    assert _cv(gaps) >= 0.5, gaps
    distinct, cv = len(set(gaps)), _cv(gaps)
    print(f"{len(canaries)} canaries among 400 live calls: {distinct} distinct gaps, CV {cv:.2f}")
    # On the wire a canary is a live call: the same header names and body keys.
    assert {a.wire for a in canaries} == {a.wire for a in live}
    assert len({a.wire for a in arrivals}) == 1


def test_floor_canaries_come_at_irregular_times_with_no_traffic(
    sqlite_store: Store, tmp_path: Path
) -> None:
    """No live call at all: the floor alone, at 8 canaries a second (691,200 a day, looks
    every 0.01 s on average), for 8 s. The gaps between the canaries' arrivals are those
    of a Poisson process: CV near 1 (a period would give 0)."""
    env = {"HOLON_CANARY_SHARE": "0", "HOLON_CANARY_FLOOR": "691200"}
    env["HOLON_CANARY_CEILING_USD"] = "100"
    with _certified(sqlite_store, tmp_path, env, canary_tick_s=0.01) as (_, log, mark):
        time.sleep(8.0)
        arrivals = log.since(mark)
    canaries = [a for a in arrivals if a.canary]
    assert len(canaries) == len(arrivals)  # nothing but canaries: no live traffic
    assert all(c.a >= HOLDOUT_FROM for c in canaries)
    gaps = [b.at - a.at for a, b in zip(canaries, canaries[1:], strict=False)]
    # 64 expected (Poisson, sd 8): outside 25..110 has probability under 1e-6.
    assert 25 <= len(canaries) <= 110, len(canaries)
    # Simulated (20,000 runs of 8 s of the floor's own draws: exponential looks, each
    # sending with the chance its wait gives): the gaps' CV lay in 0.58..1.67, median
    # 0.88, sd about 0.08. (The process's own CV is 0.92, a little under a Poisson
    # process's 1: canaries fall on looks, each with a chance of about 0.1; at the
    # default, 24 a day and a look a minute, 0.98.) 0.45 is over 5 sd below the median:
    # a correct sender fails these bounds with probability under 1e-6. A canary's
    # delivery (a few ms, against gaps of 125 ms on average) moves the CV little.
    assert 0.45 <= _cv(gaps) <= 1.8, gaps
    print(f"{len(canaries)} floor canaries in 8 s: gaps' CV {_cv(gaps):.2f}")
    # The same header names and body keys as every request the eval sent it.
    assert {a.wire for a in canaries} == {a.wire for a in log.arrivals[:mark]}


def _settle(log: AgentLog, quiet_s: float = 0.3, limit_s: float = 10.0) -> None:
    """Wait until the agent's log has been still for `quiet_s`: the last canaries the
    live calls queued have arrived."""
    deadline = time.monotonic() + limit_s
    count = -1
    while count != len(log.arrivals) and time.monotonic() < deadline:
        count = len(log.arrivals)
        time.sleep(quiet_s)
