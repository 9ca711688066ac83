"""A holder with several mandates: any one allows, it is the one recorded; budgets fall through."""

from __future__ import annotations

from pathlib import Path

import pytest

from agents import Executor
from gateway.live import LiveCalls, Lookups
from records import Store
from schema.errors import Denied
from tests.gateway.server._gateway import install_tiny, mandate, register_triage

INPUT = {"subject": "Refund please", "body": "I was charged twice."}


async def _invoke(store: Store) -> dict[str, object]:
    async with Executor() as executor:
        calls = LiveCalls(store, executor, lookups=Lookups(store, ttl_s=0))
        return await calls.invoke("finance-bot", "acme/ticket-triage", "ticket.classify", INPUT)


@pytest.mark.anyio
async def test_the_allowing_mandate_is_recorded(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(id="a-invoices", capabilities=["invoice.extract"]))
    store.mandates.grant(mandate(id="b-tickets"))
    answer = await _invoke(store)
    assert answer["mandate"] == "b-tickets"
    (row,) = store.ledger.list().items
    assert row.mandate_id == "b-tickets" and row.decision == "allow"


@pytest.mark.anyio
async def test_an_exhausted_budget_falls_through_to_the_next_mandate(
    store: Store, tmp_path: Path
) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(
        mandate(id="a-small", budget={"amount_usd": "0.005", "period": "day"})
    )  # cannot afford the 0.01 cap even once
    store.mandates.grant(mandate(id="b-large", budget={"amount_usd": "1", "period": "day"}))
    answer = await _invoke(store)
    assert answer["mandate"] == "b-large"


@pytest.mark.anyio
async def test_a_denial_lists_every_mandate(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(id="a-invoices", capabilities=["invoice.extract"]))
    store.mandates.grant(mandate(id="b-scored", min_eval_score=0.5))
    with pytest.raises(Denied) as caught:
        await _invoke(store)
    error = caught.value
    assert error.code == "not_evaluated" and error.details["mandate"] == "b-scored"
    assert [(m["mandate"], m["reason"]) for m in error.details["mandates"]] == [
        ("a-invoices", "capability_not_allowed"),
        ("b-scored", "not_evaluated"),
    ]
    (row,) = store.ledger.list().items
    assert row.decision == "deny" and row.reason == "not_evaluated"
    assert len(row.details["mandates"]) == 2


@pytest.mark.anyio
async def test_revoking_takes_effect(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate())
    await _invoke(store)
    store.mandates.revoke("finance-tickets")
    with pytest.raises(Denied) as caught:
        await _invoke(store)
    assert caught.value.code == "no_mandate"
