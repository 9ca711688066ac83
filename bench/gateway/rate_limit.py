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

    .venv/bin/python bench/gateway/rate_limit.py [--rounds 2000] [--group 1,8]
        [--postgres ADMIN_URL | --no-postgres] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from bench._support import postgres_url, sqlite_url  # noqa: E402
from records import (  # noqa: E402
    CallEntry,
    LedgerEntry,
    RateLimit,
    Reserve,
    Store,
    new_key,
    open_store,
    utcnow,
)

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=2000)
    parser.add_argument(
        "--group",
        type=lambda text: [int(g) for g in text.split(",")],
        default=[1, 8],
        help="reservations per transaction (default 1,8)",
    )
    parser.add_argument("--postgres", metavar="ADMIN_URL", default=ADMIN_URL)
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--json", action="store_true")
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
                finally:
                    store.close()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for backend, groups in results.items():
        for group, r in groups.items():
            print(
                f"{backend:<11} group {group:>3}: no limit {r['none']['p50_us']:>7.1f}/"
                f"{r['none']['p95_us']:>7.1f} us, limited {r['limited']['p50_us']:>7.1f}/"
                f"{r['limited']['p95_us']:>7.1f} us (p50/p95): adds "
                f"{r['added_p50_us']:+.1f}/{r['added_p95_us']:+.1f} us a transaction"
            )


if __name__ == "__main__":
    main()
