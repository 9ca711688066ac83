"""What a mandate's rate limit adds to the ledger's reservation transaction, same run.

The gateway's own latency bench (`run.py --rate-limit`) measures whole calls,
where a few tens of microseconds drown in the noise of a shared machine.
This measures just the transaction a reservation commits in
(`LedgerRegistry.apply`, as the gateway's `LedgerWriter` calls it), on a
SQLite file and on a throwaway PostgreSQL database: groups of `--group`
reservations under a mandate without a limit and under one with a limit
too generous to refuse anything (so every reservation takes a token),
interleaved, `--rounds` times each. Reported: the median and p95 time of
one transaction, in microseconds, and the difference.

On PostgreSQL the gateway does not run that Python path: a group is one
call of `holon_ledger_apply` (records._ledger_pg). `function` is that
call's server time (`EXPLAIN (ANALYZE, TIMING OFF)`'s execution time: the
function's statements, without the round trip and the commit's flush) for
the same groups, interleaved the same way; with `--function-from`, also for
the function a migration file installs (as `holon_ledger_apply_before`, in
the same rounds), so that a change of the function is measured in one run.
Each timed call is followed by a plain one (`wall`: the round trip and the
commit, its wait for the WAL flush, as the gateway waits for it).

    .venv/bin/python bench/gateway/rate_limit.py [--rounds 2000] [--group 1,8]
        [--postgres ADMIN_URL | --no-postgres] [--function-from MIGRATION] [--json]
"""

from __future__ import annotations

import importlib.util
import json
import re
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import psycopg

from bench._args import bench_parser
from bench._support import postgres_url, sqlite_url
from records import (
    CallEntry,
    LedgerEntry,
    RateLimit,
    Reserve,
    Store,
    new_key,
    open_store,
    utcnow,
)
from records._ledger_pg import STATEMENT, Group

ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
GENEROUS = RateLimit(1_000_000, "second", 1_000_000)
INLINE_WAIT_S = 0.002  # gateway.live._writes.INLINE_LOCK_WAIT_S (SQLite, on the loop)


def _reserve(n: int, mandate_id: str, limit: RateLimit | None, group: int) -> Reserve:
    return Reserve(
        CallEntry(f"{mandate_id}-{group}-{n}", "bench", "ticket.classify", "bench/zero", "1.0.0"),
        mandate_id,
        Decimal("0.01"),
        utcnow() + timedelta(minutes=5),
        ("month", Decimal("1000000")),
        {},
        rate_limit=limit,
    )


def measure(store: Store, rounds: int, group: int) -> dict[str, Any]:
    wait = INLINE_WAIT_S if store.dialect == "sqlite" else None
    times: dict[str, list[float]] = {"none": [], "limited": []}
    n = 0
    for warm in (True, False):
        for _ in range(50 if warm else rounds):
            for name, limit in (("none", None), ("limited", GENEROUS)):
                writes = [_reserve(n + i, f"bench-{name}", limit, group) for i in range(group)]
                n += group
                started = time.perf_counter()
                results = store.ledger.apply(writes, wait_s=wait)
                while results is None:  # SQLite's lock was taken (a WAL checkpoint): again
                    results = store.ledger.apply(writes, wait_s=wait)
                elapsed = (time.perf_counter() - started) * 1e6
                assert all(isinstance(r, LedgerEntry) for r in results), results
                if not warm:
                    times[name].append(elapsed)
    out: dict[str, Any] = {}
    for name, values in times.items():
        ordered = sorted(values)
        out[name] = {
            "p50_us": round(statistics.median(ordered), 1),
            "p95_us": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
        }
    out["added_p50_us"] = round(out["limited"]["p50_us"] - out["none"]["p50_us"], 1)
    out["added_p95_us"] = round(out["limited"]["p95_us"] - out["none"]["p95_us"], 1)
    return out


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_us": round(statistics.median(ordered), 1),
        "p95_us": round(ordered[int(0.95 * (len(ordered) - 1))], 1),
    }


def _before(migration: Path) -> str:
    """The `holon_ledger_apply` a migration file installs, as `holon_ledger_apply_before`."""
    spec = importlib.util.spec_from_file_location(f"holon_bench_{migration.stem}", migration)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    function = str(module.FUNCTION)
    return function.replace("FUNCTION holon_ledger_apply(", "FUNCTION holon_ledger_apply_before(")


def measure_function(store: Store, rounds: int, group: int, before: Path | None) -> dict[str, Any]:
    """Server time of one `holon_ledger_apply` group (PostgreSQL), without and with a limit;
    with `before`, of that migration's function too, interleaved."""
    url = store.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    functions = {"now": STATEMENT}
    times: dict[tuple[str, str], list[float]] = {}
    n = 0
    with psycopg.connect(url, autocommit=True, options="-c TimeZone=UTC") as connection:
        if before is not None:
            connection.execute(_before(before))
            functions["before"] = STATEMENT.replace(
                "holon_ledger_apply(", "holon_ledger_apply_before("
            )
        for warm in (True, False):
            for _ in range(50 if warm else rounds):
                for variant, statement in functions.items():
                    for name, limit in (("none", None), ("limited", GENEROUS)):
                        writes = [_reserve(n + i, f"fn-{name}", limit, group) for i in range(group)]
                        n += group
                        plan = connection.execute(
                            "EXPLAIN (ANALYZE, TIMING OFF) " + statement, Group(writes).params
                        ).fetchall()
                        found = re.search(r"Execution Time: ([0-9.]+) ms", plan[-1][0])
                        assert found is not None, plan
                        # The same again as the gateway sends it: with the round trip
                        # and the commit (its wait for the WAL flush).
                        writes = [_reserve(n + i, f"fn-{name}", limit, group) for i in range(group)]
                        n += group
                        params = Group(writes).params
                        started = time.perf_counter()
                        connection.execute(statement, params).fetchone()
                        wall = (time.perf_counter() - started) * 1e6
                        if not warm:
                            times.setdefault((variant, name), []).append(
                                float(found.group(1)) * 1000
                            )
                            times.setdefault((variant, name + " wall"), []).append(wall)
    out: dict[str, Any] = {}
    for variant in functions:
        none, limited = _stats(times[(variant, "none")]), _stats(times[(variant, "limited")])
        wall = {name: _stats(times[(variant, f"{name} wall")]) for name in ("none", "limited")}
        out[variant] = {
            "none": none,
            "limited": limited,
            "added_p50_us": round(limited["p50_us"] - none["p50_us"], 1),
            "added_p95_us": round(limited["p95_us"] - none["p95_us"], 1),
            "wall": wall,
            "wall_added_p50_us": round(wall["limited"]["p50_us"] - wall["none"]["p50_us"], 1),
        }
    return out


def main() -> None:
    parser = bench_parser(__doc__, rounds=2000)
    parser.add_argument(
        "--group",
        type=lambda text: [int(g) for g in text.split(",")],
        default=[1, 8],
        help="reservations per transaction (default 1,8)",
    )
    parser.add_argument("--postgres", metavar="ADMIN_URL", default=ADMIN_URL)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument(
        "--function-from",
        metavar="MIGRATION",
        type=Path,
        help="PostgreSQL: also time the holon_ledger_apply this migration file installs, e.g."
        " records/migrations/versions/0013_ledger_apply.py",
    )
    args = parser.parse_args()
    backends: dict[str, Any] = {"sqlite": sqlite_url}
    if not args.no_postgres:
        backends["postgresql"] = lambda _root: postgres_url(args.postgres)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="holon-bench-rate-") as tmp:
        for backend, make in backends.items():
            with make(Path(tmp)) as url:
                store = open_store(url, secret_key=new_key(), auto_upgrade=True)
                try:
                    results[backend] = {
                        str(group): measure(store, args.rounds, group) for group in args.group
                    }
                    if backend == "postgresql":
                        results["function"] = {
                            str(group): measure_function(
                                store, args.rounds, group, args.function_from
                            )
                            for group in args.group
                        }
                finally:
                    store.close()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for backend, groups in results.items():
        if backend == "function":
            continue
        for group, r in groups.items():
            print(
                f"{backend:<11} group {group:>3}: no limit {r['none']['p50_us']:>7.1f}/"
                f"{r['none']['p95_us']:>7.1f} us, limited {r['limited']['p50_us']:>7.1f}/"
                f"{r['limited']['p95_us']:>7.1f} us (p50/p95): adds "
                f"{r['added_p50_us']:+.1f}/{r['added_p95_us']:+.1f} us a transaction"
            )

    for group, variants in results.get("function", {}).items():
        for variant, r in variants.items():
            print(
                f"function ({variant:<6}) group {group:>3}: no limit {r['none']['p50_us']:>7.1f}/"
                f"{r['none']['p95_us']:>7.1f} us, limited {r['limited']['p50_us']:>7.1f}/"
                f"{r['limited']['p95_us']:>7.1f} us of server time (p50/p95): adds "
                f"{r['added_p50_us']:+.1f}/{r['added_p95_us']:+.1f} us a group; the call's"
                f" wall time {r['wall']['none']['p50_us']:.1f} and"
                f" {r['wall']['limited']['p50_us']:.1f} us ({r['wall_added_p50_us']:+.1f})"
            )


if __name__ == "__main__":
    main()
