"""Rate buckets in the ledger's reservation transaction (records._rate has the arithmetic).

A group of reservations locks the buckets of its mandates after its budget
rows (in id order, so two groups never wait on each other in a cycle),
takes one token per reservation in arrival order, and writes each changed
bucket once. `Buckets.available` reads a bucket outside any transaction
(`holon mandates check`), and `read_bucket` gives one to judge a call on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Table, select

from records._ledger_sql import LedgerSql
from records._models import RateBucketRow
from records._rate import (
    EPOCH,
    UNITS_PER_TOKEN,
    RateLimit,
    RateState,
    refill,
    retry_after,
    take,
)

if TYPE_CHECKING:
    from records._store import Store

__all__ = ["Bucket", "available", "lock_buckets", "read_bucket", "write_buckets"]

BUCKETS = cast(Table, RateBucketRow.__table__)


@dataclass
class Bucket:
    """A locked rate bucket: debited call by call, written once."""

    mandate_id: str
    level: int
    at: datetime  # the time `level` is at: its last update, then each refill's
    now: datetime  # when it was read, by the store's clock where there is one
    changed: bool = False

    def take(self, limit: RateLimit) -> RateState | None:
        """Take one token (refilled to the read time first); the refusal if there is less
        than one."""
        self.level, self.at = refill(limit, self.level, self.at, self.now)
        after = take(self.level)
        if after is None:
            retry_at, seconds = retry_after(limit, self.level, self.at)
            return RateState(self.mandate_id, limit, retry_at, seconds)
        self.level = after
        self.changed = True
        return None


def lock_buckets(
    sql: LedgerSql, cursor: Any, mandate_ids: Sequence[str], now: datetime
) -> dict[str, Bucket]:
    """The rate buckets of `mandate_ids`, locked in id order, created empty at the epoch
    where there are none (the first refill fills them)."""
    buckets: dict[str, Bucket] = {}
    for mandate_id in sorted(mandate_ids):
        found = sql.bucket(cursor, mandate_id)
        if found is None:
            sql.create_bucket(cursor, mandate_id)
            found = sql.bucket(cursor, mandate_id)
            assert found is not None
        level, updated_at, clock = found
        # The store's clock where it has one (PostgreSQL), else this host's (SQLite:
        # the one that holds the file); `refill` never lets the bucket's time go back.
        buckets[mandate_id] = Bucket(mandate_id, level, updated_at, clock or now)
    return buckets


def write_buckets(sql: LedgerSql, cursor: Any, buckets: dict[str, Bucket]) -> None:
    changed = [
        {"mandate_id": b.mandate_id, "level": b.level, "updated_at": b.at}
        for _, b in sorted(buckets.items())
        if b.changed
    ]
    if changed:
        sql.update_buckets(cursor, changed)


def read_bucket(store: Store, mandate_id: str, now: datetime) -> Bucket:
    """The mandate's bucket as a reservation at `now` would find it, read without a lock:
    its `take` judges a call as the reservation would, and nothing is written
    (`holon mandates check`). A mandate with no row yet has the empty bucket at the epoch
    that its first reservation would make."""
    with store.read() as session:
        row = (
            session.connection()
            .execute(
                select(BUCKETS.c.level, BUCKETS.c.updated_at).where(
                    BUCKETS.c.mandate_id == mandate_id
                )
            )
            .first()
        )
    level, at = (0, EPOCH) if row is None else (int(row.level), row.updated_at)
    return Bucket(mandate_id, level, at, now)


def available(store: Store, mandate_id: str, limit: RateLimit, now: datetime) -> int:
    """How many calls `limit` lets the mandate make at `now` (whole tokens in its bucket)."""
    bucket = read_bucket(store, mandate_id, now)
    return refill(limit, bucket.level, bucket.at, now)[0] // UNITS_PER_TOKEN
