"""A live call that stops without an outcome is charged what it reserved; one the executor
refused before sending anything is released at zero (docs/gateway.md, a crashed gateway)."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import pytest

from agents import Executor
from gateway._network import NetworkPolicy
from gateway.live import LiveCalls
from records import EXPIRED_COST_SOURCE, Store, period_key, utcnow
from schema.errors import Refused
from tests.gateway.server._agent import Recording, manifest, serving_recorder
from tests.gateway.server._gateway import mandate

pytestmark = pytest.mark.anyio

INPUT = {"subject": "Refund please"}
BUDGET = {"amount_usd": "0.10", "period": "month"}


async def test_a_call_stopped_mid_way_is_charged_its_cap(store: Store) -> None:
    recording = Recording(behaviour="slow")  # answers after 3 s
    with serving_recorder(store, "acme/slow", recording):
        store.mandates.grant(mandate(budget=BUDGET))
        async with Executor() as executor:
            calls = LiveCalls(store, executor)
            task = asyncio.create_task(
                calls.invoke("finance-bot", "acme/slow", "ticket.classify", INPUT)
            )
            while not recording.calls:  # the agent has the request
                await asyncio.sleep(0.005)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await calls.drain()
    (row,) = store.ledger.list().items
    assert (row.status, row.outcome_code, row.cost_usd, row.cost_source) == (
        "settled",
        "cancelled",
        Decimal("0.01"),
        EXPIRED_COST_SOURCE,
    )
    period = period_key("month", utcnow())
    assert store.ledger.budget("finance-tickets", period) == (Decimal("0.01"), Decimal(0))


async def test_a_call_refused_before_sending_is_released_at_zero(store: Store) -> None:
    store.agents.register(manifest("acme/local", "http://127.0.0.1:9"))
    store.mandates.grant(mandate(budget=BUDGET))
    policy = NetworkPolicy.from_setting("public")
    async with Executor(address_guard=policy.judge) as executor:
        calls = LiveCalls(store, executor)
        with pytest.raises(Refused):
            await calls.invoke("finance-bot", "acme/local", "ticket.classify", INPUT)
        await calls.drain()
    (row,) = store.ledger.list().items
    assert (row.status, row.outcome_code, row.cost_usd) == ("settled", "refused", Decimal(0))
    period = period_key("month", utcnow())
    assert store.ledger.budget("finance-tickets", period) == (Decimal(0), Decimal(0))
