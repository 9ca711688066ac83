"""A live call's wait for its reservation, by ledger path, interleaved in one run.

What a live call waits for between its decision and its agent call is
`LedgerWriter.reserve` (gateway/live/_writes.py). This times exactly that,
in one process and one event loop, for these paths, round by round:

- `sqlite`: a SQLite file, committed on the loop (the embedded path);
- `pg-thread`: PostgreSQL through the ledger's group-commit thread, four
  statements and a commit (the path before issue 20; `LedgerWriter(inline=False)`);
- `pg-statement`: PostgreSQL as one statement on the loop's asyncio
  connection (`holon_ledger_apply`, the gateway's path now);
- `pg-no-flush`: the same on a second database set to
  `synchronous_commit = off`. Not how holon runs (a reservation must be
  durable before its agent is called): it shows how much of the wait is the
  server's WAL flush, which on a shared disk varies most.

Each call reserves, then queues its settlement without waiting (as the
gateway answers before its settlement commits), so a reservation may meet
the settlement before it. With `--gap-us N`, a lone call (`c1`) waits N µs
after its reservation (its agent call) and N µs after queueing its
settlement (the answer's way to the caller and the caller's next request),
as a gateway's lone calls do: each write is then a group of its own,
where without the gap a settlement and the next reservation share one.
Loads: one call at a time (`c1`), and 16 calls at once (`c16`, one loop
turn: one group). Reported: p50 / p95 / p99 of the wait in microseconds,
and the ratios to SQLite. The whole live call's
figures are bench/gateway/run.py's; this is the part the backends differ in.

    .venv/bin/python bench/gateway/ledger.py [--rounds 5] [--calls 400] [--gap-us 0]
        [--postgres ADMIN_URL] [--json]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from bench._args import bench_parser
from bench._support import postgres_url, sqlite_url
from gateway.live._writes import LedgerWriter
from records import CallEntry, LedgerEntry, Reserve, Settle, open_store, utcnow

ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


def reserve() -> Reserve:
    return Reserve(
        CallEntry(str(uuid.uuid4()), "bench-bot", "ticket.classify", "bench/zero", "1.0.0"),
        mandate_id="bench-live",
        cap=Decimal("0.01"),
        expires_at=utcnow() + timedelta(seconds=80),
        budget=("month", Decimal("1000000")),
        details={"decision": {"mandate": "bench-live", "allow": True, "reason": None}},
    )


async def one(writer: LedgerWriter, gap_s: float = 0.0) -> float:
    started = time.perf_counter()
    entry = await writer.reserve(reserve())
    waited = time.perf_counter() - started
    assert isinstance(entry, LedgerEntry)
    if gap_s:
        await asyncio.sleep(gap_s)
    writer.later(Settle(entry.id, "ok", Decimal("0.001"), "priced", 1.0))
    if gap_s:
        await asyncio.sleep(gap_s)
    return waited * 1e6


async def run(
    writers: dict[str, LedgerWriter], rounds: int, calls: int, gap_s: float = 0.0
) -> dict[str, Any]:
    waits: dict[str, dict[str, list[float]]] = {
        load: {name: [] for name in writers} for load in ("c1", "c16")
    }
    for writer in writers.values():  # warm: connections, prepared statements, plans
        for _ in range(100):
            await one(writer)
        await writer.drain()
    for _ in range(rounds):
        for name, writer in writers.items():
            for _ in range(calls):
                waits["c1"][name].append(await one(writer, gap_s))
            await writer.drain()
            for _ in range(calls // 16):
                waits["c16"][name] += await asyncio.gather(*(one(writer) for _ in range(16)))
            await writer.drain()
    out: dict[str, Any] = {}
    for load, by_name in waits.items():
        out[load] = {}
        for name, values in by_name.items():
            ordered = sorted(values)
            out[load][name] = {
                f"p{q}_us": round(ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))])
                for q in (50, 95, 99)
            }
        base = out[load]["sqlite"]["p50_us"]
        for name in by_name:
            out[load][name]["p50_to_sqlite"] = round(out[load][name]["p50_us"] / base, 2)
    return out


def main() -> None:
    parser = bench_parser(
        __doc__, calls=400, calls_help="calls per path a round, per load", rounds=5
    )
    parser.add_argument("--postgres", metavar="ADMIN_URL", default=ADMIN_URL)
    parser.add_argument(
        "--gap-us", type=int, default=0, help="c1: the wait after each write (agent, caller)"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="holon-bench-ledger-") as tmp, ExitStack() as stack:
        lite = open_store(stack.enter_context(sqlite_url(Path(tmp))), auto_upgrade=True)
        pg = open_store(stack.enter_context(postgres_url(args.postgres)), auto_upgrade=True)
        unflushed = stack.enter_context(postgres_url(args.postgres))
        engine = create_engine(args.postgres, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            name = make_url(unflushed).database
            conn.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
        engine.dispose()
        pg_off = open_store(unflushed, auto_upgrade=True)
        try:

            async def main_async() -> dict[str, Any]:
                writers = {
                    "sqlite": LedgerWriter(lite),
                    "pg-thread": LedgerWriter(pg, inline=False),
                    "pg-statement": LedgerWriter(pg),
                    "pg-no-flush": LedgerWriter(pg_off),
                }
                return await run(writers, args.rounds, args.calls, args.gap_us / 1e6)

            out = asyncio.run(main_async())
        finally:
            lite.close()
            pg.close()
            pg_off.close()
    if args.json:
        print(json.dumps(out, indent=2))
        return
    for load, by_name in out.items():
        for name, n in by_name.items():
            print(
                f"{load:<4} {name:<13} p50 {n['p50_us']:>6} us  p95 {n['p95_us']:>6}  "
                f"p99 {n['p99_us']:>6}  ({n['p50_to_sqlite']}x SQLite at p50)"
            )


if __name__ == "__main__":
    main()
