"""Every fault agent of the executor's matrix at once: 64 concurrent calls through one Executor.

The fault agents are tests/agents/faults.py's (HTTP behaviours, and a bare
TCP server for faults below HTTP), tests/agents/asgi_apps.py's in-process
apps, and a closed port. Mixed in a seeded order and run concurrently, each
call must still become its row's outcome class, nothing may raise, and once
the executor is closed no task is left on the loop and no connection to an
agent is left open.
"""

from __future__ import annotations

import asyncio
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from agents import CallLimits, Executor, Manifest, Outcome, Pricing
from agents._outcome import OUTCOME_CODES
from tests._servers import serve
from tests.agents.conftest import closed_port, make_agent
from tests.agents.faults import Recorder, fault_app, raw_server
from tests.faults._campaign import TALLY

pytestmark = pytest.mark.slow

CALLS = 64
FAST = CallLimits(timeout_s=Decimal("0.5"))
CAP = CallLimits(max_cost_usd=Decimal("0.05"))
ANY = CallLimits()
PRICING = Pricing(
    per_call_usd=Decimal("0.002"),
    per_1k_input_tokens_usd=Decimal("0.0005"),
    per_1k_output_tokens_usd=Decimal("0.0015"),
)


@dataclass(frozen=True)
class Row:
    name: str
    agent: Manifest
    limits: CallLimits
    expected: str


def _http_rows(url: str) -> list[Row]:
    def row(behaviour: str, expected: str, limits: CallLimits = ANY, **kw: object) -> Row:
        agent = make_agent(f"{url}/{behaviour}", **kw)  # type: ignore[arg-type]
        return Row(behaviour, agent, limits, expected)

    rows = [
        row("ok", "ok"),
        row("gzipped", "ok"),
        row("flaky", "ok"),
        row("slow", "timeout", FAST),
        row("hang-after-headers", "timeout", FAST),
        row("error-500", "agent_error"),
        row("redirect", "agent_error"),
        *(row(f"status/{code}", "agent_error") for code in (400, 404, 429, 503)),
        row("not-json", "invalid_response"),
        row("no-output", "invalid_response"),
        row("status/204", "invalid_response"),
        row("deep?depth=100", "invalid_response"),
        row("deep?depth=200000", "invalid_response"),
        row("huge", "invalid_response", CallLimits(timeout_s=Decimal(20))),
        row("gzip-bomb", "invalid_response", CallLimits(timeout_s=Decimal(20))),
        row("drop-mid-body", "invalid_response"),
        row("ok", "invalid_response", CallLimits(max_response_bytes=10)),
        row("expensive", "cost_exceeded", CAP),
        row(
            "expensive", "cost_exceeded", CallLimits(max_cost_usd=Decimal("0.004")), pricing=PRICING
        ),
        row("ok", "cost_exceeded", CAP, pricing=Pricing(per_call_usd=Decimal("0.10"))),
        row("expensive", "ok", CAP, pricing=PRICING),
    ]
    kinds = ("negative", "float", "bool", "cost_text", "cost_negative", "cost_nan", "not_object")
    rows += [row(f"bad-usage?kind={kind}", "invalid_response") for kind in kinds]
    return rows


def _asgi_rows() -> list[Row]:
    def asgi(attribute: str, expected: str, module: str = "tests.agents.asgi_apps") -> Row:
        agent = make_agent(f"asgi:{module}:{attribute}", protocol="asgi")
        return Row(f"asgi {module}:{attribute}", agent, CallLimits(), expected)

    return [
        asgi("app", "ok"),
        asgi("no_lifespan_app", "ok"),
        asgi("raising_app", "agent_error"),
        asgi("incomplete_app", "invalid_response"),
        asgi("missing", "unreachable"),
        asgi("not_an_app", "unreachable"),
        asgi("failing_startup_app", "unreachable"),
        asgi("app", "unreachable", module="tests.agents.asgi_broken"),
    ]


@pytest.fixture(scope="module")
def fault_url() -> Iterator[str]:
    with serve(fault_app(Recorder())) as url:
        yield url


def _open_agent_sockets(ports: set[int]) -> list[str]:
    """This process's TCP sockets still connected to one of `ports` (its client side)."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(target[8:-1])
    left = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            remote_port = int(fields[2].rsplit(":", 1)[1], 16)
            if remote_port in ports and fields[9] in mine:
                left.append(line.strip())
    return left


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("seed", range(2))
def test_every_fault_agent_at_once(fault_url: str, seed: int) -> None:
    rng = random.Random(f"executor-faults-{seed}")
    with (
        raw_server(["drop"]) as (drop_url, _),
        raw_server(["garbage"]) as (garbage_url, _),
        raw_server(["hang"]) as (hang_url, _),
    ):
        rows = [
            *_http_rows(fault_url),
            *_asgi_rows(),
            Row("raw drop", make_agent(drop_url), CallLimits(), "unreachable"),
            Row("raw garbage", make_agent(garbage_url), CallLimits(), "invalid_response"),
            Row("raw hang", make_agent(hang_url), FAST, "timeout"),
            Row(
                "closed port",
                make_agent(f"http://127.0.0.1:{closed_port()}/"),
                CallLimits(),
                "unreachable",
            ),
            Row(
                "tls to plain http",
                make_agent(fault_url.replace("http://", "https://") + "/ok"),
                CallLimits(timeout_s=Decimal(5)),
                "unreachable",
            ),
        ]
        assert {row.expected for row in rows} == OUTCOME_CODES
        # Every row at least once, the rest drawn at random: 64 calls in a seeded order.
        calls = rows + [rng.choice(rows) for _ in range(CALLS - len(rows))]
        rng.shuffle(calls)
        ports = {int(u.rsplit(":", 1)[1]) for u in (fault_url, drop_url, garbage_url, hang_url)}

        async def campaign() -> tuple[list[Outcome | BaseException], int, list[str]]:
            async with Executor() as executor:
                outcomes = await asyncio.gather(
                    *(
                        executor.execute(c.agent, "echo", {"n": i}, c.limits)
                        for i, c in enumerate(calls)
                    ),
                    return_exceptions=True,
                )
                pooled = len(_open_agent_sockets(ports))
            left = [repr(t) for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            return outcomes, pooled, left

        outcomes, pooled, left = asyncio.run(campaign())
        open_sockets = _open_agent_sockets(ports)
    raised = [
        (c.name, o) for c, o in zip(calls, outcomes, strict=True) if isinstance(o, BaseException)
    ]
    assert not raised
    wrong = [
        (c.name, c.expected, o.code, o.error)
        for c, o in zip(calls, outcomes, strict=True)
        if isinstance(o, Outcome) and o.code != c.expected
    ]
    assert not wrong
    for outcome in outcomes:
        assert isinstance(outcome, Outcome)
        assert (outcome.error is None) == outcome.ok
        assert outcome.error is None or (len(outcome.error) <= 300 and outcome.error.isprintable())
    assert not left, f"tasks left on the loop: {left}"
    assert pooled > 0, "the socket check saw no connection even while the executor was open"
    assert not open_sockets, f"connections to agents left open: {open_sockets}"
    TALLY["executor: concurrent calls"] += len(calls)
    TALLY["executor: fault agents"] = len(rows)
