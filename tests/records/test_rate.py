"""The token bucket's arithmetic (records._rate): exact refills, the burst cap, Retry-After."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from records import RateLimit
from records._rate import EPOCH, UNITS_PER_TOKEN, refill, retry_after, take

T0 = datetime(2026, 12, 1, 12, 0, 0, tzinfo=UTC)
TOKEN = UNITS_PER_TOKEN


def test_a_new_bucket_is_full_at_its_first_read() -> None:
    limit = RateLimit(100, "minute", 10)
    assert refill(limit, 0, EPOCH, T0) == (10 * TOKEN, T0)


@pytest.mark.parametrize(
    ("limit", "elapsed", "tokens"),
    [
        (RateLimit(1, "second", 5), timedelta(seconds=1), 1),
        (RateLimit(60, "minute", 100), timedelta(seconds=1), 1),
        (RateLimit(3600, "hour", 100), timedelta(seconds=1), 1),
        (RateLimit(7, "hour", 100), timedelta(hours=3), 21),
        (RateLimit(1_000_000, "second", 1_000_000), timedelta(microseconds=1), 1),
    ],
)
def test_a_refill_gives_whole_tokens_exactly(
    limit: RateLimit, elapsed: timedelta, tokens: int
) -> None:
    level, at = refill(limit, 0, T0, T0 + elapsed)
    assert (level, at) == (tokens * TOKEN, T0 + elapsed)


def test_a_refill_of_a_third_of_a_token_adds_up_without_drift() -> None:
    # 1 call per 3 s: a third of a token a second. Three one-second refills, or a
    # million microsecond ones, give exactly one token (a float would not).
    limit = RateLimit(20, "minute", 5)
    level, at = 0, T0
    for _ in range(3):
        level, at = refill(limit, level, at, at + timedelta(seconds=1))
    assert level == TOKEN
    level, at = 0, T0
    for _ in range(3_000):
        level, at = refill(limit, level, at, at + timedelta(milliseconds=1))
    assert level == TOKEN
    assert take(level) == 0
    assert take(level - 1) is None


def test_the_burst_caps_the_level() -> None:
    limit = RateLimit(10, "second", 3)
    assert refill(limit, TOKEN, T0, T0 + timedelta(days=365))[0] == 3 * TOKEN
    # A lowered burst (a new revision of the mandate) caps what the bucket held.
    assert refill(RateLimit(10, "second", 1), 3 * TOKEN, T0, T0)[0] == TOKEN


def test_a_clock_behind_the_bucket_refills_nothing_and_keeps_its_time() -> None:
    limit = RateLimit(10, "second", 10)
    assert refill(limit, TOKEN // 2, T0, T0 - timedelta(seconds=30)) == (TOKEN // 2, T0)
    # ... and the time it lagged is never refilled later: only time past T0 counts.
    level, at = refill(limit, TOKEN // 2, T0, T0 - timedelta(seconds=30))
    assert refill(limit, level, at, T0 + timedelta(milliseconds=50))[0] == TOKEN


def test_take_needs_a_whole_token() -> None:
    assert take(2 * TOKEN) == TOKEN
    assert take(TOKEN) == 0
    assert take(TOKEN - 1) is None
    assert take(0) is None


@pytest.mark.parametrize(
    ("limit", "level", "now", "ready", "seconds"),
    [
        # 1 a minute, empty: 60 s.
        (RateLimit(1, "minute", 1), 0, T0, T0 + timedelta(seconds=60), 60),
        # 100 a second, empty: 10 ms, which is 1 s rounded up (never 0).
        (RateLimit(100, "second", 10), 0, T0, T0 + timedelta(seconds=1), 1),
        # Half a token of 1 every 3 s: 1.5 s, rounded up to 2 s; the time to the second.
        (RateLimit(20, "minute", 1), TOKEN // 2, T0, T0 + timedelta(seconds=2), 2),
        # From a time with microseconds, the time is rounded up to the next second.
        (
            RateLimit(1, "second", 1),
            0,
            T0 + timedelta(microseconds=1),
            T0 + timedelta(seconds=2),
            1,
        ),
        # One unit short of a token, 1 an hour: the wait is one microsecond, Retry-After 1.
        (RateLimit(1, "hour", 1), TOKEN - 1, T0, T0 + timedelta(seconds=1), 1),
        # 1 an hour, empty: 3600 s exactly.
        (RateLimit(1, "hour", 10), 0, T0, T0 + timedelta(hours=1), 3600),
    ],
)
def test_retry_after_rounds_up_to_whole_seconds(
    limit: RateLimit, level: int, now: datetime, ready: datetime, seconds: int
) -> None:
    assert retry_after(limit, level, now) == (ready, seconds)


def test_a_call_at_the_retry_time_finds_a_token() -> None:
    limit = RateLimit(7, "minute", 2)
    level = TOKEN // 3
    ready, seconds = retry_after(limit, level, T0)
    assert take(refill(limit, level, T0, T0 + timedelta(seconds=seconds))[0]) is not None
    assert take(refill(limit, level, T0, ready)[0]) is not None
    # A microsecond before the exact refill time, not yet.
    exact_us = -(-(TOKEN - level) // limit.units_per_us)
    early = T0 + timedelta(microseconds=exact_us - 1)
    assert take(refill(limit, level, T0, early)[0]) is None


def test_every_limit_refills_a_whole_number_of_units_a_microsecond() -> None:
    for per in ("second", "minute", "hour"):
        for calls in (1, 7, 59, 61, 3599, 1_000_000):
            limit = RateLimit(calls, per, 1)  # type: ignore[arg-type]
            # calls per `per` seconds, in tokens per microsecond, exactly.
            seconds = {"second": 1, "minute": 60, "hour": 3600}[per]
            assert limit.units_per_us * seconds * 1_000_000 == calls * TOKEN


def test_two_processes_with_skewed_clocks_gain_at_most_the_skew_once() -> None:
    # Process B's clock is 10 s ahead of A's; both call as fast as the bucket lets them,
    # taking turns on the one row. A bucket whose time could go back would let B refill
    # the 10 s again after each of A's calls (a ~10x limit); it never goes back, so over
    # 100 s the two get at most burst + 100 s of refill + the 10 s of skew.
    limit = RateLimit(1, "second", 1)
    skew = timedelta(seconds=10)
    level, at = 0, EPOCH
    admitted = 0
    for step in range(400):  # every 0.25 s of true time, for 100 s
        true_now = T0 + step * timedelta(milliseconds=250)
        now = true_now + (skew if step % 2 else timedelta(0))
        level, at = refill(limit, level, at, now)
        after = take(level)
        if after is not None:
            level, admitted = after, admitted + 1
    assert 100 <= admitted <= 1 + 100 + 10
