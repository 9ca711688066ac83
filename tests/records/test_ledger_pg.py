"""PostgreSQL's one-statement group commit (records._ledger_pg, `holon_ledger_apply`) does
what the Python path (`LedgerRegistry.apply`) does: the same writes give the same results,
rows, budgets, buckets and live-conformance counts; and it is one statement."""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from datetime import timedelta
from decimal import Decimal
from typing import Any, cast

import anyio
import pytest

from records import (
    BudgetState,
    CallEntry,
    Deny,
    LedgerEntry,
    LedgerWrite,
    RateState,
    Reserve,
    Settle,
    Store,
    new_key,
    open_store,
    period_key,
    utcnow,
)
from records._pg_probes import CLIENT_KEEPALIVES, KEEPALIVE_IDLE_S, SERVER_KEEPALIVES
from records._rate import RateLimit
from schema.errors import NotFound
from schema.jsontext import dumps

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]

Apply = Callable[[Sequence[LedgerWrite]], Awaitable[list[Any]]]
LIMIT = RateLimit(calls=1, per="hour", burst=2)
# Exact numbers in a row's details are stored as written (text, scale, exponent, key order).
DETAILS = {"decision": {"z": Decimal("0.10"), "a": Decimal("1E+5"), "n": [1, "x", None]}}


def _reservation(
    agent: str,
    mandate_id: str,
    cap: str,
    *,
    budget: str | None,
    rate_limit: RateLimit | None,
    details: dict[str, Any] | None = None,
    expires_in_s: float = 60,
    **fields: Any,
) -> Reserve:
    """bot's call of acme/`agent` for ticket.classify reserved under `mandate_id`, with
    `budget` a month (or none) and `rate_limit`, for `expires_in_s`."""
    return Reserve(
        CallEntry(str(uuid.uuid4()), "bot", "ticket.classify", f"acme/{agent}", "1.0.0"),
        mandate_id=mandate_id,
        cap=Decimal(cap),
        expires_at=utcnow() + timedelta(seconds=expires_in_s),
        budget=None if budget is None else ("month", Decimal(budget)),
        details={} if details is None else details,
        rate_limit=rate_limit,
        **fields,
    )


def _reserve(side: str, cap: str, *, expires_in_s: float = 60, budget: bool = True) -> Reserve:
    return _reservation(
        side,
        f"m-{side}" if budget else f"rate-{side}",
        cap,
        budget="0.05" if budget else None,
        rate_limit=None if budget else LIMIT,
        details=DETAILS,
        expires_in_s=expires_in_s,
        mandate_revision=3,
    )


def _deny(side: str, reason: str) -> Deny:
    call = CallEntry(str(uuid.uuid4()), "bot", "ticket.classify", f"acme/{side}", "1.0.0")
    return Deny(call, f"m-{side}", reason, DETAILS, mandate_revision=2)


def _shape(result: Any) -> Any:
    """A result without what differs between the sides by construction (ids, times, names)."""
    if isinstance(result, LedgerEntry):
        values = asdict(result)
        for name in ("id", "request_id", "created_at", "expires_at", "settled_at"):
            values.pop(name)
        for name in ("mandate_id", "agent_id"):
            if values[name] is not None:
                values[name] = values[name].split("-")[0].split("/")[0]
        return values
    if isinstance(result, BudgetState):
        return ("budget", result.spent, result.reserved, result.cap, result.exhausted)
    if isinstance(result, RateState):
        return ("rate", result.retry_after_s)
    if isinstance(result, NotFound):
        return ("not found",)
    raise AssertionError(result)


def _python_path(store: Store) -> Apply:
    """The Python path (`LedgerRegistry.apply`, in this thread) as an `Apply`."""

    async def apply(writes: Sequence[LedgerWrite]) -> list[Any]:
        results = store.ledger.apply(writes)
        assert results is not None
        return results

    return apply


async def _scenario(store: Store, side: str, apply: Apply) -> list[Any]:
    """Three groups: reservations past the budget and the burst with denials; settlements
    (capped, idempotent, unknown, in one group with a reservation they make room for);
    after an expiry sweep, the settlement of an expired reservation."""
    first = [_reserve(side, "0.01") for _ in range(6)]
    first[2] = _reserve(side, "0.01", expires_in_s=-1)  # left behind by a "crash"
    limited = [_reserve(side, "0.01", budget=False) for _ in range(3)]
    group1: list[LedgerWrite] = [
        *first,
        *limited,
        _deny(side, "invalid_input"),
        _deny(side, "budget_exhausted"),
    ]
    out1 = await apply(group1)
    r1, r2, r3 = out1[0], out1[1], out1[2]
    lim1 = out1[6]
    group2: list[LedgerWrite] = [
        Settle(r1.id, "ok", Decimal("0.004"), "priced", 1.5),
        Settle(r2.id, "invalid_output", Decimal("0.5"), "reported", 2.25),
        Settle(r1.id, "ok", Decimal("0.001"), "priced", 9.0),  # settled already
        Settle("led_missing", "ok", Decimal(0), "none", 0.0),
        Settle(lim1.id, "ok", Decimal("0.002"), "priced", 0.1),
        _reserve(side, "0.005"),  # fits in what the settlements gave back
        _reserve(side, "0.01"),  # does not
    ]
    out2 = await apply(group2)
    return [*out1, *out2, r3]


async def test_the_function_does_what_the_python_path_does(pg_store: Store) -> None:
    python = _python_path(pg_store)
    function = pg_store.ledger.async_ledger().apply
    sides = {"py": python, "fn": function}
    outs = {side: await _scenario(pg_store, side, apply) for side, apply in sides.items()}
    # The expiry sweep charges both sides' left-behind reservation, then each side
    # settles it (an expired row's charge corrected to its outcome).
    assert pg_store.ledger.expire() == 2
    for side, apply in sides.items():
        (corrected,) = await apply([Settle(outs[side][-1].id, "ok", Decimal("0.003"), "p", 1.0)])
        outs[side][-1] = corrected
    shaped = {side: [_shape(r) for r in out] for side, out in outs.items()}
    assert shaped["fn"] == shaped["py"]
    assert [type(r).__name__ for r in outs["fn"]].count("BudgetState") == 2
    assert [type(r).__name__ for r in outs["fn"]].count("RateState") == 1

    period = period_key("month", utcnow())
    assert pg_store.ledger.budget("m-fn", period) == pg_store.ledger.budget("m-py", period)
    assert pg_store.ledger.budget("m-fn", period) == (Decimal("0.017"), Decimal("0.025"))
    assert pg_store.ledger.rate_available("rate-fn", LIMIT) == 0
    rows = {
        side: sorted(
            (_shape(r) for r in pg_store.ledger.list(agent_id=f"acme/{side}").items),
            key=dumps,
        )
        for side in sides
    }
    assert rows["fn"] == rows["py"] and len(rows["fn"]) == 10
    for side in sides:  # the details as stored, to the character
        for row in pg_store.ledger.list(agent_id=f"acme/{side}").items:
            assert dumps(row.details) == dumps(DETAILS)
    counts = {
        side: pg_store.conformance.of(f"acme/{side}", "ticket.classify").to_json() for side in sides
    }
    assert counts["fn"] == counts["py"]
    assert (counts["fn"]["calls"], counts["fn"]["violations"]) == (4, 1)
    assert counts["fn"]["input_violations"] == 1


async def test_a_group_is_one_statement_and_a_duplicate_fails_it_whole(pg_store: Store) -> None:
    ledger = pg_store.ledger.async_ledger()
    first = _reserve("fn", "0.01")
    (entry,) = await ledger.apply([first])
    assert isinstance(entry, LedgerEntry)
    # The same request id again, in a group with a good write: nothing of it is written.
    good = _reserve("fn", "0.01")
    with pytest.raises(Exception, match="(?i)unique|duplicate"):
        await ledger.apply([good, first])
    assert [r.request_id for r in pg_store.ledger.list().items] == [first.call.request_id]
    period = period_key("month", utcnow())
    assert pg_store.ledger.budget("m-fn", period) == (Decimal(0), Decimal("0.01"))
    # The connection survives a failed statement.
    (again,) = await ledger.apply([good])
    assert isinstance(again, LedgerEntry)
    ledger.close()


async def test_every_connection_names_its_process_unless_the_url_names_it(
    pg_store: Store, postgres_url: str
) -> None:
    """pg_stat_activity says which holon process holds each connection: the engine's and the
    group commit's are `holon <pid>`; an `application_name` in the URL is kept."""
    query = "SELECT application_name FROM pg_stat_activity WHERE pid = pg_backend_pid()"
    ledger = pg_store.ledger.async_ledger()
    with pg_store.engine.connect() as connection:
        assert connection.exec_driver_sql(query).scalar_one() == f"holon {os.getpid()}"
    connection = await ledger._connect()
    assert (await (await connection.execute(query)).fetchone()) == (f"holon {os.getpid()}",)
    ledger.close()
    named = open_store(f"{postgres_url}?application_name=billing", secret_key=new_key())
    try:
        with named.engine.connect() as connection:
            assert connection.exec_driver_sql(query).scalar_one() == "billing"
        ledger = named.ledger.async_ledger()
        connection = await ledger._connect()
        assert (await (await connection.execute(query)).fetchone()) == ("billing",)
        ledger.close()
    finally:
        named.close()


_KEEPALIVES = (
    "SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'), "
    "current_setting('tcp_keepalives_count'), current_setting('tcp_user_timeout')"
)


async def test_every_connection_has_the_server_drop_a_vanished_host(
    pg_store: Store, postgres_url: str
) -> None:
    """The engine's and the group commit's connections carry SERVER_KEEPALIVES (a host
    gone mid-transaction lets go of its locks: tests/hosts/test_dead_host.py) and the
    client's keepalives; what the URL sets itself wins."""
    expected = tuple(str(v) for v in SERVER_KEEPALIVES.values())
    ledger = pg_store.ledger.async_ledger()
    with pg_store.engine.connect() as pooled:
        assert tuple(pooled.exec_driver_sql(_KEEPALIVES).one()) == expected
        client = _client_parameters(pooled)
        assert {k: client[k] for k in CLIENT_KEEPALIVES} == {
            k: str(v) for k, v in CLIENT_KEEPALIVES.items()
        }
    grouped = await ledger._connect()
    assert (await (await grouped.execute(_KEEPALIVES)).fetchone()) == expected
    assert grouped.info.get_parameters()["keepalives_idle"] == str(KEEPALIVE_IDLE_S)
    assert (await (await grouped.execute("SHOW TimeZone")).fetchone()) == ("UTC",)
    ledger.close()
    own = "options=-c%20tcp_keepalives_idle%3D60&keepalives_idle=30"
    tuned = open_store(f"{postgres_url}?{own}", secret_key=new_key())
    try:
        with tuned.engine.connect() as pooled:
            assert pooled.exec_driver_sql(_KEEPALIVES).one()[0] == "60"
            assert _client_parameters(pooled)["keepalives_idle"] == "30"
        ledger = tuned.ledger.async_ledger()
        grouped = await ledger._connect()
        assert grouped.info.get_parameters()["keepalives_idle"] == "30"
        assert (await (await grouped.execute(_KEEPALIVES)).fetchone()) == ("60", *expected[1:])
        ledger.close()
    finally:
        tuned.close()


def _client_parameters(connection: Any) -> dict[str, str]:
    """libpq's parameters of a pooled connection (psycopg's)."""
    parameters: dict[str, str] = connection.connection.dbapi_connection.info.get_parameters()
    return parameters


def _kinds_alike(outs: dict[str, list[Any]]) -> list[str]:
    """The function's results (`fn`) shaped as the Python path's (`py`): their kinds."""
    assert [_shape(r) for r in outs["fn"]] == [_shape(r) for r in outs["py"]]
    return [type(r).__name__ for r in outs["fn"]]


def _limited(side: str, cap: str, mandate: str = "both") -> Reserve:
    """A reservation under a mandate with a budget (0.05 a month) and a rate limit (burst 2)."""
    return _reservation(side, f"{mandate}-{side}", cap, budget="0.05", rate_limit=LIMIT)


async def test_a_budget_and_a_rate_limit_together_as_the_python_path(pg_store: Store) -> None:
    """The token and the budget in one reservation (migration 0016: the take's UPDATE checks
    the budget): a call the budget refuses takes no token, a call the bucket refuses holds
    no budget; a bucket's first use; a group with two rate-limited mandates (their buckets
    locked up front) and one with a single one (locked by its take)."""

    python = _python_path(pg_store)
    function = pg_store.ledger.async_ledger().apply
    outs: dict[str, list[Any]] = {}
    for side, apply in {"py": python, "fn": function}.items():
        one = await apply(
            [
                _limited(side, "0.03"),  # the bucket's first use: a token, 0.03 held
                _limited(side, "0.03"),  # over the budget: refused, no token taken
                _limited(side, "0.01"),  # the second token
                _limited(side, "0.01"),  # fits the budget; no token left: nothing held
            ]
        )
        two = await apply(
            [
                _limited(side, "0.01", mandate="pair-b"),
                _limited(side, "0.01", mandate="pair-a"),
                _limited(side, "0.01", mandate="pair-b"),
                _limited(side, "0.01", mandate="pair-b"),  # pair-b's third: refused
            ]
        )
        outs[side] = [*one, *two]
    kinds = _kinds_alike(outs)
    assert kinds == ["LedgerEntry", "BudgetState", "LedgerEntry", "RateState"] + [
        "LedgerEntry",
        "LedgerEntry",
        "LedgerEntry",
        "RateState",
    ]
    period = period_key("month", utcnow())
    for side in ("py", "fn"):
        assert pg_store.ledger.budget(f"both-{side}", period) == (Decimal(0), Decimal("0.04"))
        assert pg_store.ledger.budget(f"pair-b-{side}", period) == (Decimal(0), Decimal("0.02"))
        for mandate in ("both", "pair-a", "pair-b"):
            expected = 1 if mandate == "pair-a" else 0
            assert pg_store.ledger.rate_available(f"{mandate}-{side}", LIMIT) == expected


@pytest.mark.parametrize("size", [1, 2], ids=["lone writes", "pairs"])
@pytest.mark.parametrize("budget", [False, True], ids=["no budget", "budget"])
async def test_concurrent_groups_share_a_bucket_exactly(
    pg_store: Store, budget: bool, size: int
) -> None:
    """Groups in flight at once on several connections (as three per gateway process, and
    several processes, make them), each taking a token of one bucket that does not exist
    yet: exactly the burst is granted. Without a budget nothing else serialises them: the
    take's own row lock, and its check again on the version it waited for, must; groups
    of one write (migration 0018) lock nothing up front, and make the bucket at first use
    as they race."""
    burst = 10
    limit = RateLimit(calls=1, per="hour", burst=burst)
    ledgers = [pg_store.ledger.async_ledger() for _ in range(6)]

    def write() -> Reserve:
        return _reservation(
            "many", "crowded", "0.01", budget="1000" if budget else None, rate_limit=limit
        )

    async def many(ledger: Any) -> list[Any]:
        results: list[Any] = []
        for _ in range(20 // size):
            results += await ledger.apply([write() for _ in range(size)])
        return results

    found: list[list[Any]] = [[] for _ in ledgers]

    async def run(index: int) -> None:
        found[index] = await many(ledgers[index])

    async with anyio.create_task_group() as group:
        for index in range(len(ledgers)):
            group.start_soon(run, index)
    results = [r for rs in found for r in rs]
    assert len(results) == 120
    assert sum(isinstance(r, LedgerEntry) for r in results) == burst
    assert sum(isinstance(r, RateState) for r in results) == 120 - burst
    assert len(pg_store.ledger.list(limit=500).items) == burst
    if budget:
        period = period_key("month", utcnow())
        assert pg_store.ledger.budget("crowded", period) == (Decimal(0), Decimal("0.10"))
    for ledger in ledgers:
        ledger.close()


async def test_a_bucket_whose_time_is_ahead_refills_nothing_and_keeps_it(pg_store: Store) -> None:
    """A bucket last written by a process whose clock is ahead (records._rate): the function,
    as the Python path, refills nothing, keeps the bucket's time, takes a token while there
    is a whole one and then refuses until a token's refill after that time."""
    from sqlalchemy import Table, insert, select

    from records._models import RateBucketRow
    from records._rate import UNITS_PER_TOKEN

    buckets = cast(Table, RateBucketRow.__table__)
    ahead = utcnow().replace(microsecond=0) + timedelta(hours=2)
    with pg_store.engine.begin() as connection:
        for side in ("py", "fn"):
            connection.execute(
                insert(buckets).values(
                    mandate_id=f"rate-{side}", level=UNITS_PER_TOKEN + 7, updated_at=ahead
                )
            )

    python = _python_path(pg_store)
    function = pg_store.ledger.async_ledger().apply
    outs = {}
    for side, apply in {"py": python, "fn": function}.items():
        outs[side] = await apply([_reserve(side, "0.01", budget=False) for _ in range(2)])
    assert [_shape(r) for r in outs["fn"]] == [_shape(r) for r in outs["py"]]
    taken, refused = outs["fn"]
    assert isinstance(taken, LedgerEntry) and isinstance(refused, RateState)
    # One call an hour: the next whole token is an hour (less 7 units) after the bucket's
    # time, counted from that time (the store's clock has not reached it).
    assert (refused.retry_at, refused.retry_after_s) == (ahead + timedelta(hours=1), 3600)
    with pg_store.engine.connect() as connection:
        rows = connection.execute(
            select(buckets.c.mandate_id, buckets.c.level, buckets.c.updated_at)
        )
        state = {m: (level, at) for m, level, at in rows}
    assert state["rate-fn"] == state["rate-py"] == (7, ahead)


async def test_lone_writes_do_what_the_python_path_does(pg_store: Store) -> None:
    """A group of one write locks nothing up front (migration 0018): a reservation whose
    budget has no row for the period yet (made), one the budget refuses, a rate-limited one
    with a budget (its budget locked before its bucket, both made at first use) and one the
    bucket refuses, a settlement, an idempotent repeat, an unknown row, and a denial that
    counts an input violation: each alone, the same results, budgets and counts as the
    Python path."""

    python = _python_path(pg_store)
    function = pg_store.ledger.async_ledger().apply
    outs: dict[str, list[Any]] = {}
    for side, apply in {"py": python, "fn": function}.items():
        out: list[Any] = []

        async def one(write: LedgerWrite, apply: Apply = apply, out: list[Any] = out) -> Any:
            (result,) = await apply([write])
            out.append(result)
            return result

        first = await one(_reserve(side, "0.03"))  # the period's first call: the row made
        await one(_reserve(side, "0.03"))  # over the budget (0.05): refused
        await one(_limited(side, "0.01", mandate="lone"))  # budget and bucket made
        await one(_limited(side, "0.01", mandate="lone"))  # the burst's second token
        await one(_limited(side, "0.01", mandate="lone"))  # no token left
        await one(Settle(first.id, "ok", Decimal("0.002"), "priced", 1.0))
        await one(Settle(first.id, "ok", Decimal("0.009"), "priced", 1.0))  # idempotent
        await one(Settle("led_missing", "ok", Decimal(0), "none", 0.0))
        await one(_deny(side, "invalid_input"))
        outs[side] = out
    kinds = _kinds_alike(outs)
    assert kinds == [
        "LedgerEntry",
        "BudgetState",
        "LedgerEntry",
        "LedgerEntry",
        "RateState",
        "LedgerEntry",
        "LedgerEntry",
        "NotFound",
        "LedgerEntry",
    ]
    period = period_key("month", utcnow())
    for side in ("py", "fn"):
        assert pg_store.ledger.budget(f"m-{side}", period) == (Decimal("0.002"), Decimal(0))
        assert pg_store.ledger.budget(f"lone-{side}", period) == (Decimal(0), Decimal("0.02"))
        assert pg_store.ledger.rate_available(f"lone-{side}", LIMIT) == 0
    counts = {
        side: pg_store.conformance.of(f"acme/{side}", "ticket.classify").to_json()
        for side in ("py", "fn")
    }
    assert counts["fn"] == counts["py"]
    assert (counts["fn"]["calls"], counts["fn"]["input_violations"]) == (1, 1)


@pytest.mark.parametrize("limited", [False, True], ids=["budget", "budget and rate limit"])
async def test_concurrent_lone_reservations_hold_the_budget_exactly(
    pg_store: Store, limited: bool
) -> None:
    """Lone reservations in flight at once on six connections against one budget with no
    row yet (0.10, 0.01 a call) and, with a limit, a bucket that holds more than that:
    exactly ten are granted. Each locks the budget with its own statement (migration
    0018), and none deadlocks with another's bucket."""
    limit = RateLimit(calls=1, per="hour", burst=50) if limited else None
    ledgers = [pg_store.ledger.async_ledger() for _ in range(6)]

    def write() -> Reserve:
        return _reservation("lone", "lonely", "0.01", budget="0.10", rate_limit=limit)

    found: list[list[Any]] = [[] for _ in ledgers]

    async def run(index: int) -> None:
        for _ in range(5):
            found[index] += await ledgers[index].apply([write()])

    async with anyio.create_task_group() as group:
        for index in range(len(ledgers)):
            group.start_soon(run, index)
    results = [r for rs in found for r in rs]
    assert len(results) == 30
    assert sum(isinstance(r, LedgerEntry) for r in results) == 10
    assert sum(isinstance(r, BudgetState) for r in results) == 20
    period = period_key("month", utcnow())
    assert pg_store.ledger.budget("lonely", period) == (Decimal(0), Decimal("0.10"))
    if limit is not None:  # a call the budget refuses takes no token
        assert pg_store.ledger.rate_available("lonely", limit) == 40
    for ledger in ledgers:
        ledger.close()
