"""What the front doors' tests share: a gateway whose caller's budget holds two calls."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from records import Store
from tests.gateway.server._gateway import (
    Gateway,
    install_tiny,
    mandate,
    register_triage,
    running_gateway,
)

INPUT = {"subject": "Refund please", "body": "I was charged twice."}
CALLER = "caller:finance-bot"


@contextmanager
def two_call_gateway(store: Store, tmp_path: Path) -> Iterator[Gateway]:
    """acme/priced at 0.004 a call; finance-bot's mandate: a 0.005 cap, 0.01 a month."""
    install_tiny(store, tmp_path)
    register_triage(store, "acme/priced", pricing={"per_call_usd": "0.004"})
    store.mandates.grant(
        mandate(budget={"amount_usd": "0.01", "period": "month"}, max_cost_per_call_usd="0.005")
    )
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gateway:
        yield gateway
