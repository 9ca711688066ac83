"""A mandate's `rate_limit` (docs/gateway.md, "Rate limits"): its document, its bucket in the
ledger's reservation transaction, 429 with Retry-After, and no way around it."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from agents import Executor
from gateway.client import HttpService
from gateway.live import LiveCalls, Lookups
from gateway.mandates import mandate_from_dict
from records import (
    BudgetState,
    CallEntry,
    LedgerEntry,
    RateLimit,
    RateState,
    Reserve,
    Store,
    utcnow,
)
from schema.errors import BudgetExhausted, MandateError, RateLimited
from tests.gateway.server._gateway import install_tiny, mandate, register_triage, running_gateway

INPUT = {"subject": "Refund please", "body": "I was charged twice."}
BODY = {"capability": "ticket.classify", "input": INPUT}
SLOW = {"calls": 1, "per": "hour"}  # refills nothing a test can wait for


# -- the document ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rate_limit", "path"),
    [
        ({"calls": 0, "per": "minute"}, "$.rate_limit.calls"),
        ({"calls": 1_000_001, "per": "minute"}, "$.rate_limit.calls"),
        ({"calls": 1.5, "per": "minute"}, "$.rate_limit.calls"),
        ({"calls": "10", "per": "minute"}, "$.rate_limit.calls"),
        ({"calls": True, "per": "minute"}, "$.rate_limit.calls"),
        ({"calls": 10, "per": "day"}, "$.rate_limit.per"),
        ({"calls": 10, "per": "minute", "burst": 0}, "$.rate_limit.burst"),
        ({"calls": 10, "per": "minute", "burst": -1}, "$.rate_limit.burst"),
        ({"calls": 10, "per": "minute", "burst": 2_000_000}, "$.rate_limit.burst"),
        ({"calls": 10, "per": "minute", "window": 5}, "$.rate_limit.window"),
        ({"per": "minute"}, "$.rate_limit"),
        ({"calls": 10}, "$.rate_limit"),
        ("100/minute", "$.rate_limit"),
    ],
)
def test_a_bad_rate_limit_names_its_path(rate_limit: Any, path: str) -> None:
    with pytest.raises(MandateError) as caught:
        mandate_from_dict(mandate(rate_limit=rate_limit))
    assert caught.value.details["path"] == path, caught.value
    assert caught.value.http_status == 422


def test_a_bad_rate_limit_in_a_file_names_its_line(tmp_path: Path) -> None:
    from gateway.mandates import load_mandate

    path = tmp_path / "m.yaml"
    path.write_text(
        "schema_version: 1\nid: m\nholder: bot\ncapabilities: [ticket.classify]\n"
        'max_cost_per_call_usd: "0.01"\nrate_limit:\n  calls: 10\n  per: fortnight\n'
    )
    with pytest.raises(MandateError) as caught:
        load_mandate(path)
    error = caught.value
    assert error.location.line == 8 and error.details["path"] == "$.rate_limit.per"
    assert str(error).startswith(f"{path}:8")


def test_burst_defaults_to_calls() -> None:
    parsed = mandate_from_dict(mandate(rate_limit={"calls": 100, "per": "minute"}))
    assert parsed.rate_limit == RateLimit(100, "minute", 100)
    parsed = mandate_from_dict(mandate(rate_limit={"calls": 100, "per": "minute", "burst": 10}))
    assert parsed.rate_limit == RateLimit(100, "minute", 10)
    assert mandate_from_dict(mandate()).rate_limit is None


# -- the bucket in the ledger ------------------------------------------------------------


def _reserve(n: int, mandate_id: str = "m", **kw: Any) -> Reserve:
    return Reserve(
        CallEntry(f"req-{mandate_id}-{n}", "bot", "ticket.classify", "acme/a", "1.0.0"),
        mandate_id,
        Decimal("0.01"),
        utcnow() + timedelta(minutes=5),
        kw.pop("budget", None),
        {},
        rate_limit=kw.pop("rate_limit", RateLimit(1, "hour", 3)),
    )


def test_one_group_debits_the_bucket_call_by_call(store: Store) -> None:
    # Seven reservations of one loop turn in one transaction: three take the burst,
    # the other four are refused, and a mandate without a limit is not held up.
    writes = [_reserve(i) for i in range(7)] + [_reserve(0, "free", rate_limit=None)]
    results = store.ledger.apply(writes)
    assert results is not None
    kinds = [type(r).__name__ for r in results]
    assert kinds == ["LedgerEntry"] * 3 + ["RateState"] * 4 + ["LedgerEntry"]
    refused = results[3]
    assert isinstance(refused, RateState)
    assert refused.retry_after_s == 3600  # one call an hour, and none left
    assert refused.to_json()["rate_limit"] == {"calls": 1, "per": "hour", "burst": 3}
    # Nothing was written for a refusal: three reservations of `m`, one of `free`.
    rows = store.ledger.list().items
    assert Counter(r.mandate_id for r in rows) == {"m": 3, "free": 1}
    assert store.ledger.rate_available("m", RateLimit(1, "hour", 3)) == 0
    # The next group, another transaction, finds the bucket as the last one left it.
    (again,) = store.ledger.apply([_reserve(9)]) or []
    assert isinstance(again, RateState)


def test_a_call_the_budget_refuses_takes_no_token(store: Store) -> None:
    limit = RateLimit(1, "hour", 2)
    (refused,) = store.ledger.apply(
        [_reserve(0, rate_limit=limit, budget=("month", Decimal("0.005")))]
    ) or [None]
    assert isinstance(refused, BudgetState)  # the budget speaks first: 402, not "retry later"
    assert store.ledger.rate_available("m", limit) == 2
    results = store.ledger.apply([_reserve(i, rate_limit=limit) for i in (1, 2, 3)])
    assert [type(r) for r in results or []] == [LedgerEntry, LedgerEntry, RateState]


def test_a_lowered_burst_caps_the_bucket_and_a_raised_one_adds_nothing(store: Store) -> None:
    wide, narrow = RateLimit(1, "hour", 5), RateLimit(1, "hour", 1)
    assert store.ledger.rate_available("m", wide) == 5  # no bucket yet: full
    results = store.ledger.apply([_reserve(0, rate_limit=wide)]) or []
    assert isinstance(results[0], LedgerEntry)
    assert store.ledger.rate_available("m", wide) == 4
    results = store.ledger.apply([_reserve(i, rate_limit=narrow) for i in (1, 2)]) or []
    assert [type(r) for r in results] == [LedgerEntry, RateState]  # 4 tokens, capped at 1
    # Back to the wide limit: the bucket holds what it held (0), not a fresh burst.
    results = store.ledger.apply([_reserve(3, rate_limit=wide)]) or []
    assert [type(r) for r in results] == [RateState]


# -- live calls ----------------------------------------------------------------------------


async def _calls(store: Store, n: int, agent: str = "acme/ticket-triage") -> list[Any]:
    out: list[Any] = []
    async with Executor() as executor:
        calls = LiveCalls(store, executor, lookups=Lookups(store, ttl_s=0))
        for _ in range(n):
            try:
                out.append(await calls.invoke("finance-bot", agent, "ticket.classify", INPUT))
            except RateLimited as exc:
                out.append(exc)
    return out


@pytest.mark.anyio
async def test_over_the_limit_a_call_is_rate_limited_with_a_ledger_row(
    store: Store, tmp_path: Path
) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(rate_limit={**SLOW, "burst": 3}))
    results = await _calls(store, 5)
    assert [type(r).__name__ for r in results] == ["dict"] * 3 + ["RateLimited"] * 2
    error = results[3]
    assert error.code == "rate_limited" and error.http_status == 429 and error.exit_code == 1
    assert error.details["mandate"] == "finance-tickets"
    assert error.details["rate_limit"] == {"calls": 1, "per": "hour", "burst": 3}
    assert 1 <= error.details["retry_after_s"] <= 3600
    assert "retry_at" in error.details and "next call may go" in (error.hint or "")
    rows = store.ledger.list().items
    assert Counter((r.decision, r.reason, r.status) for r in rows) == {
        ("allow", None, "settled"): 3,
        ("deny", "rate_limited", "denied"): 2,
    }
    assert all(r.reserved_usd == 0 and r.cost_usd == 0 for r in rows if r.decision == "deny")


@pytest.mark.anyio
async def test_a_rate_limited_mandate_falls_through_to_the_next(
    store: Store, tmp_path: Path
) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(id="a-limited", rate_limit={**SLOW, "burst": 1}))
    store.mandates.grant(mandate(id="b-open"))
    results = await _calls(store, 3)
    assert [r["mandate"] for r in results] == ["a-limited", "b-open", "b-open"]


@pytest.mark.anyio
async def test_with_every_mandate_limited_the_soonest_one_is_named(
    store: Store, tmp_path: Path
) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(id="a-hourly", rate_limit={**SLOW, "burst": 1}))
    store.mandates.grant(mandate(id="b-minutely", rate_limit={"calls": 1, "per": "minute"}))
    store.mandates.grant(mandate(id="c-broke", budget={"amount_usd": "0.001", "period": "day"}))
    results = await _calls(store, 3)
    assert [type(r).__name__ for r in results] == ["dict", "dict", "RateLimited"]
    error = results[2]
    assert error.details["mandate"] == "b-minutely" and error.details["retry_after_s"] <= 60
    reasons = {m["mandate"]: m["reason"] for m in error.details["mandates"]}
    assert reasons == {
        "a-hourly": "rate_limited",
        "b-minutely": "rate_limited",
        "c-broke": "budget_too_small",  # 0.001 cannot pay one 0.01 call
    }


@pytest.mark.anyio
async def test_a_mandate_out_of_budget_is_budget_exhausted_whatever_its_bucket(
    store: Store, tmp_path: Path
) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(
        mandate(rate_limit={**SLOW, "burst": 1}, budget={"amount_usd": "0.001", "period": "day"})
    )
    async with Executor() as executor:
        calls = LiveCalls(store, executor, lookups=Lookups(store, ttl_s=0))
        with pytest.raises(BudgetExhausted):
            await calls.invoke("finance-bot", "acme/ticket-triage", "ticket.classify", INPUT)
    assert store.ledger.rate_available("finance-tickets", RateLimit(1, "hour", 1)) == 1


@pytest.mark.anyio
async def test_a_new_revision_does_not_refill_the_bucket(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(rate_limit={**SLOW, "burst": 2}))
    assert [type(r).__name__ for r in await _calls(store, 2)] == ["dict", "dict"]
    # Re-granted with another description, with a bigger burst, revoked and reinstated:
    # the bucket is the mandate's, and none of these gives a call back.
    store.mandates.grant(mandate(rate_limit={**SLOW, "burst": 2}, description="again"))
    store.mandates.grant(mandate(rate_limit={**SLOW, "burst": 50}))
    store.mandates.revoke("finance-tickets")
    status, info = store.mandates.grant(mandate(rate_limit={**SLOW, "burst": 50}))
    assert status == "reinstated" and info.revision == 4
    assert [type(r).__name__ for r in await _calls(store, 1)] == ["RateLimited"]


@pytest.mark.anyio
async def test_the_bucket_refills(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(rate_limit={"calls": 4, "per": "second", "burst": 1}))
    # Calls in a row until one finds the bucket empty (the second, unless this machine
    # stalls for the 250 ms a token takes to come back between two calls).
    results = await _calls(store, 1)
    while isinstance(results[-1], dict) and len(results) < 6:
        results += await _calls(store, 1)
    limited = results[-1]
    assert isinstance(results[0], dict) and isinstance(limited, RateLimited), results
    assert limited.details["retry_after_s"] == 1  # at most 250 ms, rounded up
    await asyncio.sleep(0.3)
    (again,) = await _calls(store, 1)
    assert isinstance(again, dict)


# -- over HTTP -----------------------------------------------------------------------------


async def _fire(url: str, token: str, paths: list[str]) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(
        timeout=60, limits=httpx.Limits(max_connections=len(paths))
    ) as client:
        return await asyncio.gather(
            *(client.post(url + path, json=BODY, headers=headers) for path in paths)
        )


@pytest.mark.slow
def test_concurrent_calls_by_invoke_and_route_share_one_bucket(
    store: Store, tmp_path: Path
) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(rate_limit={**SLOW, "burst": 5}))
    paths = ["/v1/agents/acme/ticket-triage/invoke", "/v1/capabilities/ticket.classify/invoke"]
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        token = gw.tokens["caller:finance-bot"]
        responses = asyncio.run(_fire(gw.url, token, [paths[i % 2] for i in range(40)]))
        metrics = gw.call("GET", "/metrics", "operator").text
    assert 'holon_live_denials_total{reason="rate_limited"} 35' in metrics
    assert Counter(r.status_code for r in responses) == {200: 5, 429: 35}
    for response in responses:
        if response.status_code != 429:
            continue
        error = response.json()["error"]
        assert error["code"] == "rate_limited"
        retry = int(response.headers["Retry-After"])
        assert retry == error["details"]["retry_after_s"] and 1 <= retry <= 3600
    rows = store.ledger.list(limit=100).items
    assert sum(r.decision == "allow" for r in rows) == 5
    assert {r.reason for r in rows if r.decision == "deny"} == {"rate_limited"}


@pytest.mark.slow
def test_the_http_client_raises_rate_limited(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(rate_limit={**SLOW, "burst": 1}))
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        client = HttpService(gw.url, gw.tokens["caller:finance-bot"])
        try:
            client.invoke(None, "acme/ticket-triage", "ticket.classify", INPUT)
            with pytest.raises(RateLimited) as caught:
                client.invoke(None, "acme/ticket-triage", "ticket.classify", INPUT)
        finally:
            client.close()
    error = caught.value
    assert error.exit_code == 1 and error.details["retry_after_s"] >= 1
    assert error.hint is not None and "next call may go in" in error.hint


def test_retry_after_is_not_sent_without_a_rate_limit(store: Store, tmp_path: Path) -> None:
    install_tiny(store, tmp_path)
    register_triage(store)
    store.mandates.grant(mandate(budget={"amount_usd": "0.001", "period": "day"}))
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        started = time.monotonic()
        answer = gw.call(
            "POST", "/v1/agents/acme/ticket-triage/invoke", "caller:finance-bot", json=BODY
        )
        assert time.monotonic() - started < 30
    assert answer.status_code == 402 and "retry-after" not in answer.headers


def test_transactions_racing_on_one_bucket_take_each_token_once(store: Store) -> None:
    # Eight threads, each with its own connection, commit reservations of one mandate as
    # fast as they can: the bucket row's lock (FOR UPDATE; SQLite's write lock) lets each
    # token go once. A read of the level outside the lock would hand some out twice.
    limit = RateLimit(1, "hour", 40)
    store.ledger.apply([_reserve(-1, rate_limit=limit)])  # the row exists: no INSERT race
    taken: list[int] = []

    def hammer(worker: int) -> None:
        for n in range(15):
            (result,) = store.ledger.apply([_reserve(worker * 100 + n, rate_limit=limit)]) or []
            taken.append(isinstance(result, LedgerEntry))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(hammer, range(8)))
    assert sum(taken) == 39 and len(taken) == 120
    assert store.ledger.rate_available("m", limit) == 0
