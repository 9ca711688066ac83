"""The event loop's ledger writer on PostgreSQL (one statement a group, records._ledger_pg):
processes racing on one budget never overspend it, a group with a refused reservation
refuses exactly that one, and a process killed after its reservation committed leaves a
reserved row that the expiry sweep charges."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from gateway.live._writes import LedgerWriter
from records import (
    EXPIRED_REASON,
    BudgetState,
    CallEntry,
    LedgerEntry,
    Reserve,
    Store,
    period_key,
    utcnow,
)

pytestmark = [pytest.mark.postgres]

ROOT = Path(__file__).resolve().parents[2]
MANDATE = "m-race"

# A process of its own: `CALLS` reservations of 0.01 in one loop turn (one group), against
# a budget of `BUDGET`; prints how many it got, then (with `hold`) waits to be killed.
RACER = """
import asyncio, sys, uuid
from datetime import timedelta
from decimal import Decimal
from gateway.live._writes import LedgerWriter
from records import BudgetState, CallEntry, LedgerEntry, Reserve, open_store, utcnow

url, calls, budget, hold, expires_s = sys.argv[1:6]
calls, expires_s = int(calls), float(expires_s)

def reserve():
    return Reserve(
        CallEntry(str(uuid.uuid4()), "bot", "ticket.classify", "acme/t", "1.0.0"),
        mandate_id="m-race", cap=Decimal("0.01"),
        expires_at=utcnow() + timedelta(seconds=expires_s),
        budget=("month", Decimal(budget)), details={},
    )

async def main():
    store = open_store(url)
    writer = LedgerWriter(store)
    sys.stdout.write("ready\\n"); sys.stdout.flush()
    sys.stdin.readline()  # go
    results = await asyncio.gather(*(writer.reserve(reserve()) for _ in range(calls)))
    got = sum(isinstance(r, LedgerEntry) for r in results)
    refused = sum(isinstance(r, BudgetState) for r in results)
    sys.stdout.write(f"{got} {refused}\\n"); sys.stdout.flush()
    if hold == "hold":
        await asyncio.sleep(3600)
    store.close()

asyncio.run(main())
"""


def _racer(
    url: str, calls: int, budget: str, hold: bool, expires_s: float = 60
) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            RACER,
            url,
            str(calls),
            budget,
            "hold" if hold else "go",
            str(expires_s),
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


def _go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()


def _answer(proc: subprocess.Popen[str]) -> tuple[int, int]:
    assert proc.stdout is not None
    got, refused = proc.stdout.readline().split()
    return int(got), int(refused)


@pytest.mark.slow
def test_processes_racing_on_one_budget_never_overspend_it(
    pg_store: Store, postgres_url: str
) -> None:
    # Four processes, 40 reservations each, at once, against a budget of 50.
    racers = [_racer(postgres_url, 40, "0.50", hold=False) for _ in range(4)]
    for proc in racers:
        _go(proc)
    answers = [_answer(proc) for proc in racers]
    for proc in racers:
        proc.communicate(timeout=60)  # to its end, its pipes closed
        assert proc.returncode == 0
    assert sum(got for got, _ in answers) == 50
    assert sum(refused for _, refused in answers) == 4 * 40 - 50
    period = period_key("month", utcnow())
    assert pg_store.ledger.budget(MANDATE, period) == (Decimal(0), Decimal("0.50"))
    rows = pg_store.ledger.list(limit=1000).items
    assert len(rows) == 50 and all(r.status == "reserved" for r in rows)


@pytest.mark.slow
def test_a_killed_process_leaves_a_reservation_that_expires_charged(
    pg_store: Store, postgres_url: str
) -> None:
    proc = _racer(postgres_url, 3, "1.00", hold=True, expires_s=1)
    _go(proc)
    assert _answer(proc) == (3, 0)  # committed: the process said so, then it is killed
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    rows = pg_store.ledger.list().items
    assert [r.status for r in rows] == ["reserved"] * 3
    period = period_key("month", utcnow())
    assert pg_store.ledger.budget(MANDATE, period) == (Decimal(0), Decimal("0.03"))
    assert pg_store.ledger.expire(now=utcnow() + timedelta(seconds=5)) == 3
    rows = pg_store.ledger.list().items
    assert {(r.status, r.reason, r.cost_usd) for r in rows} == {
        ("expired", EXPIRED_REASON, Decimal("0.01"))
    }
    assert pg_store.ledger.budget(MANDATE, period) == (Decimal("0.03"), Decimal(0))


@pytest.mark.anyio
async def test_a_group_with_one_refused_reservation_refuses_only_it(pg_store: Store) -> None:
    writer = LedgerWriter(pg_store)

    def reserve(cap: str) -> Reserve:
        return Reserve(
            CallEntry(str(uuid.uuid4()), "bot", "ticket.classify", "acme/t", "1.0.0"),
            mandate_id=MANDATE,
            cap=Decimal(cap),
            expires_at=utcnow() + timedelta(seconds=60),
            budget=("month", Decimal("0.10")),
            details={},
        )

    # One loop turn: 0.04 + 0.04, then 0.04 (over: 0.12), then 0.02 (fits: 0.10).
    writes = [reserve("0.04"), reserve("0.04"), reserve("0.04"), reserve("0.02")]
    results = await asyncio.gather(*(writer.reserve(w) for w in writes))
    assert [type(r).__name__ for r in results] == [
        "LedgerEntry",
        "LedgerEntry",
        "BudgetState",
        "LedgerEntry",
    ]
    refused = results[2]
    assert isinstance(refused, BudgetState) and refused.exhausted
    assert (refused.spent, refused.reserved, refused.cap) == (
        Decimal(0),
        Decimal("0.08"),
        Decimal("0.04"),
    )
    # One group: one statement stamped every row with one time.
    rows = pg_store.ledger.list().items
    assert len(rows) == 3 and len({r.created_at for r in rows}) == 1
    assert {r.request_id for r in rows} == {
        w.call.request_id
        for w, r in zip(writes, results, strict=True)
        if isinstance(r, LedgerEntry)
    }
    period = period_key("month", utcnow())
    assert pg_store.ledger.budget(MANDATE, period) == (Decimal(0), Decimal("0.10"))
    await writer.drain()
    writer.close()
