"""An org's overview sums its agents' live calls (docs/console.md, "Org pages"): allowed,
denied, contract violations and cost, every caller's together; never a caller's rows,
and never another org's agents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.service import StoreService
from records import Store
from schema.errors import HolonError
from tests.gateway.console._inproc import Console
from tests.gateway.console._runs import triage_console
from tests.gateway.server._gateway import mandate, register_triage

INPUT = {"subject": "Refund", "body": "I was charged twice."}


@pytest.fixture
def live(sqlite_store: Store, tmp_path: Path) -> Iterator[Console]:
    with triage_console(sqlite_store, tmp_path) as built:
        yield built


def test_an_org_sees_its_agents_live_figures_and_no_callers_rows(
    live: Console, tmp_path: Path
) -> None:
    register_triage(live.store, "other/ticket-triage")
    service = StoreService(live.store, tmp_path / "home")
    service.mandates.grant(mandate(agents=["acme/ticket-triage"]), source="<test>")
    service.invoke("finance-bot", "acme/ticket-triage", "ticket.classify", INPUT)
    with pytest.raises(HolonError):  # outside the mandate: denied, and in the ledger
        service.invoke("finance-bot", "other/ticket-triage", "ticket.classify", INPUT)
    service.store.ledger.drain()
    page = live.get("/ui/", "org:acme").text
    assert "Live calls since" in page and "1 allowed, 0 denied" in page
    assert "finance-bot" not in page and "finance-tickets" not in page
    other = live.get("/ui/", "org:other").text
    assert "0 allowed, 1 denied" in other and "acme/ticket-triage" not in other
    assert "Live calls since" not in live.get("/ui/", "operator").text
