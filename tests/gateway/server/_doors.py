"""What the front doors' tests share: a gateway whose caller's budget holds two calls, and
one whose caller's rate limit lets one call an hour through."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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
def priced_gateway(
    store: Store, tmp_path: Path, per_call_usd: str, **mandate_fields: Any
) -> Iterator[Gateway]:
    """acme/priced at `per_call_usd` a call, finance-bot's mandate with `mandate_fields`,
    and a gateway running no eval workers."""
    install_tiny(store, tmp_path)
    register_triage(store, "acme/priced", pricing={"per_call_usd": per_call_usd})
    store.mandates.grant(mandate(**mandate_fields))
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gateway:
        yield gateway


@contextmanager
def two_call_gateway(store: Store, tmp_path: Path) -> Iterator[Gateway]:
    """acme/priced at 0.004 a call; finance-bot's mandate: a 0.005 cap, 0.01 a month."""
    budget = {"amount_usd": "0.01", "period": "month"}
    with priced_gateway(
        store, tmp_path, "0.004", budget=budget, max_cost_per_call_usd="0.005"
    ) as gateway:
        yield gateway


@contextmanager
def one_call_an_hour_gateway(store: Store, tmp_path: Path) -> Iterator[Gateway]:
    """acme/priced at 0.0001 a call; finance-bot's mandate: one call an hour."""
    with priced_gateway(store, tmp_path, "0.0001", rate_limit={"calls": 1, "per": "hour"}) as gw:
        yield gw
