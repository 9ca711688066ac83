"""Rate limits: a token bucket per mandate, in exact integer arithmetic (docs/gateway.md).

A mandate's `rate_limit` (`calls` per `per`, with a `burst`) is a bucket
that holds at most `burst` tokens and refills `calls` tokens per `per`; a
call that reaches the ledger's reservation takes one token, and a call that
finds less than one is refused until the time the bucket next holds one.

No floats: the level is an integer count of *units*, `UNITS_PER_TOKEN` to a
token, and a unit is what a limit of one call per hour refills in one
microsecond. A limit per second refills `calls * 3600` units a microsecond,
per minute `calls * 60`, per hour `calls`: integers, so a refill over any
whole number of microseconds (the resolution of the stored time) is exact,
and the unit does not depend on the limit, so a bucket outlives a change of
its mandate's limit (its level is capped at the new burst).

Time is the store's clock where there is one to share (PostgreSQL:
`statement_timestamp()` of the statement that locks the bucket row), so
gateway processes on other hosts agree; on SQLite, every process is on the
machine that holds the file and reads its one clock. And the bucket's time
never goes back: a process whose clock is behind the bucket's last update
refills nothing (it waits for its clock to catch up), so a clock that jumps
or lags can give at most what `calls` refills over the jump, once, never a
second burst.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from records._types import utc_text

__all__ = [
    "EPOCH",
    "PER_SECONDS",
    "UNITS_PER_TOKEN",
    "RateLimit",
    "RatePer",
    "RateState",
    "refill",
    "retry_after",
    "take",
]

RatePer = Literal["second", "minute", "hour"]
PER_SECONDS: dict[str, int] = {"second": 1, "minute": 60, "hour": 3600}
MICROS = 1_000_000
UNITS_PER_TOKEN = 3600 * MICROS
# A bucket row made for a mandate's first call: empty at the epoch, so its first refill
# fills it (to `burst`) whatever the limit, without a dialect's own clock in the INSERT.
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US = timedelta(microseconds=1)


@dataclass(frozen=True)
class RateLimit:
    """`calls` per `per`, at most `burst` at once."""

    calls: int
    per: RatePer
    burst: int

    @property
    def units_per_us(self) -> int:
        """What the bucket refills in a microsecond, in units (an integer for every limit)."""
        return self.calls * (3600 // PER_SECONDS[self.per])

    @property
    def capacity(self) -> int:
        return self.burst * UNITS_PER_TOKEN

    def to_json(self) -> dict[str, Any]:
        return {"calls": self.calls, "per": self.per, "burst": self.burst}


@dataclass(frozen=True)
class RateState:
    """A reservation the bucket refused: when the next call of the mandate may go."""

    mandate_id: str
    limit: RateLimit
    retry_at: datetime  # rounded up to the second
    retry_after_s: int  # whole seconds from the refusal, rounded up, at least 1

    def to_json(self) -> dict[str, Any]:
        return {
            "mandate": self.mandate_id,
            "rate_limit": self.limit.to_json(),
            "retry_after_s": self.retry_after_s,
            "retry_at": utc_text(self.retry_at),
        }


def refill(
    limit: RateLimit, level: int, updated_at: datetime, now: datetime
) -> tuple[int, datetime]:
    """The bucket's (level, time) at `now`: refilled for the time since `updated_at` and
    capped at `burst`. A `now` before `updated_at` (another process's clock ahead of
    this one) refills nothing and keeps the bucket's time."""
    if now <= updated_at:
        return min(level, limit.capacity), updated_at
    elapsed_us = (now - updated_at) // _US
    return min(level + elapsed_us * limit.units_per_us, limit.capacity), now


def take(level: int) -> int | None:
    """The level after one call takes its token, or None if there is not a whole one."""
    return level - UNITS_PER_TOKEN if level >= UNITS_PER_TOKEN else None


def retry_after(limit: RateLimit, level: int, now: datetime) -> tuple[datetime, int]:
    """When a bucket at `level` (under one token) at `now` next holds a token: that time
    rounded up to the second, and the whole seconds until then (rounded up, at least 1)."""
    missing = UNITS_PER_TOKEN - level
    wait_us = -(-missing // limit.units_per_us)  # ceiling: the first microsecond it is whole
    ready = now + timedelta(microseconds=wait_us)
    if ready.microsecond:
        ready = ready.replace(microsecond=0) + timedelta(seconds=1)
    seconds = max(1, -(-wait_us // MICROS))
    return ready, seconds
