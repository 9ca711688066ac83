"""The outcome table of docs/agents.md ("Outcomes"), one real fault agent per row, over loopback."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents import CallLimits, Executor, Outcome
from tests.agents.conftest import Faults, make_agent
from tests.agents.faults import HUGE_BYTES, raw_server

pytestmark = pytest.mark.anyio

FAST = CallLimits(timeout_s=0.5)


async def call(executor: Executor, faults: Faults, behaviour: str, **limits: object) -> Outcome:
    return await executor.execute(
        faults.agent(behaviour),
        "echo",
        {"n": 1},
        CallLimits(**limits),  # type: ignore[arg-type]
    )


def assert_failure(outcome: Outcome, code: str) -> None:
    assert outcome.code == code, outcome
    assert outcome.output is None
    assert outcome.cost_usd == 0 and outcome.cost_source == "none"
    assert outcome.error and len(outcome.error) <= 300
    assert outcome.error.isprintable()


async def test_ok_has_output_usage_and_status(executor: Executor, faults: Faults) -> None:
    outcome = await call(executor, faults, "ok")
    assert outcome.code == "ok" and outcome.ok
    assert outcome.output == {"echo": {"n": 1}}
    assert outcome.usage is not None and outcome.usage.input_tokens == 1000
    assert outcome.http_status == 200 and outcome.error is None
    assert outcome.attempt_count == 1 and outcome.attempts[0].code == "ok"
    assert outcome.latency_ms >= outcome.attempts[0].latency_ms > 0


async def test_slow_agent_times_out(executor: Executor, faults: Faults) -> None:
    outcome = await call(executor, faults, "slow", timeout_s=0.3)
    assert_failure(outcome, "timeout")
    assert outcome.http_status is None


async def test_hang_after_headers_times_out_with_the_status_seen(
    executor: Executor, faults: Faults
) -> None:
    outcome = await call(executor, faults, "hang-after-headers", timeout_s=0.3)
    assert_failure(outcome, "timeout")
    assert outcome.http_status == 200
    assert "after HTTP 200" in (outcome.error or "")


async def test_500_is_agent_error_with_escaped_detail(executor: Executor, faults: Faults) -> None:
    outcome = await call(executor, faults, "error-500")
    assert_failure(outcome, "agent_error")
    assert outcome.http_status == 500
    assert outcome.error is not None
    assert "\x1b" not in outcome.error and "\\x1b" in outcome.error and "\r" not in outcome.error


@pytest.mark.parametrize("status", [400, 404, 429, 503])
async def test_any_non_2xx_is_agent_error(executor: Executor, faults: Faults, status: int) -> None:
    outcome = await call(executor, faults, f"status/{status}")
    assert_failure(outcome, "agent_error")
    assert outcome.http_status == status


async def test_redirect_is_agent_error_and_never_followed(
    executor: Executor, faults: Faults
) -> None:
    outcome = await call(executor, faults, "redirect")
    assert_failure(outcome, "agent_error")
    assert outcome.http_status == 302
    assert "/redirect-target" in (outcome.error or "")
    assert faults.recorder.redirect_target_hits == 0
    # The target exists and answers: not calling it was our choice.
    followed = await call(executor, faults, "redirect-target")
    assert followed.ok and faults.recorder.redirect_target_hits == 1


@pytest.mark.parametrize(
    ("behaviour", "reason"),
    [
        ("not-json", "not JSON"),
        ("no-output", "no 'output'"),
        ("status/204", "not JSON"),
        ("deep?depth=100", "deeper than 64"),
        ("deep?depth=200000", "deeper than 64"),
        ("bad-usage?kind=negative", "input_tokens"),
        ("bad-usage?kind=float", "output_tokens"),
        ("bad-usage?kind=bool", "input_tokens"),
        ("bad-usage?kind=cost_text", "cost_usd"),
        ("bad-usage?kind=cost_negative", "cost_usd"),
        ("bad-usage?kind=cost_nan", "cost_usd"),
        ("bad-usage?kind=not_object", "'usage' must be an object"),
    ],
)
async def test_invalid_responses(
    executor: Executor, faults: Faults, behaviour: str, reason: str
) -> None:
    outcome = await call(executor, faults, behaviour)
    assert_failure(outcome, "invalid_response")
    assert reason in (outcome.error or "")


async def test_depth_limit_is_a_limit(executor: Executor, faults: Faults) -> None:
    assert (await call(executor, faults, "deep?depth=100", max_json_depth=200)).ok
    assert not (await call(executor, faults, "deep?depth=60", max_json_depth=50)).ok


async def test_50_mb_body_is_cut_at_the_cap_without_reading_it_all(
    executor: Executor, faults: Faults
) -> None:
    outcome = await call(executor, faults, "huge", timeout_s=10)
    assert_failure(outcome, "invalid_response")
    assert "larger than 4194304 bytes" in (outcome.error or "")
    # The agent could push only what the cap plus socket buffers let through
    # before we hung up: nowhere near 50 MB.
    assert faults.recorder.huge_bytes_sent < HUGE_BYTES // 2
    # The cut connection was not put back into the pool: the next call works.
    assert (await call(executor, faults, "ok")).ok


async def test_response_cap_is_configurable(executor: Executor, faults: Faults) -> None:
    outcome = await call(executor, faults, "ok", max_response_bytes=10)
    assert_failure(outcome, "invalid_response")
    assert "larger than 10 bytes" in (outcome.error or "")


async def test_gzip_bomb_is_cut_at_the_cap(executor: Executor, faults: Faults) -> None:
    outcome = await call(executor, faults, "gzip-bomb", timeout_s=10)
    assert_failure(outcome, "invalid_response")
    assert "larger than" in (outcome.error or "")


async def test_gzip_body_within_the_cap_is_read(executor: Executor, faults: Faults) -> None:
    outcome = await call(executor, faults, "gzipped")
    assert outcome.ok and outcome.output == {"zipped": True}


async def test_dropped_mid_body_is_invalid_response(executor: Executor, faults: Faults) -> None:
    outcome = await call(executor, faults, "drop-mid-body", unreachable_retries=2)
    assert_failure(outcome, "invalid_response")
    assert "mid-body" in (outcome.error or "")
    assert outcome.attempt_count == 1  # only unreachable is retried


async def test_drop_before_any_byte_is_unreachable(executor: Executor) -> None:
    with raw_server(["drop"]) as (url, log):
        outcome = await executor.execute(make_agent(url), "echo", {}, CallLimits(timeout_s=5))
    assert_failure(outcome, "unreachable")
    assert len(log.heads) == 1  # the request did arrive; no answer came back


async def test_bytes_that_are_not_http_are_invalid_response(executor: Executor) -> None:
    with raw_server(["garbage"]) as (url, _):
        outcome = await executor.execute(
            make_agent(url), "echo", {}, CallLimits(timeout_s=5, unreachable_retries=2)
        )
    assert_failure(outcome, "invalid_response")
    assert outcome.attempt_count == 1


async def test_priced_cost_over_the_cap_is_cost_exceeded(
    executor: Executor, faults: Faults
) -> None:
    outcome = await call(executor, faults, "expensive", max_cost_usd=Decimal("0.05"))
    assert outcome.code == "cost_exceeded"
    assert outcome.output is None
    assert outcome.cost_usd == Decimal("1.00") and outcome.cost_source == "reported"
    assert outcome.usage is not None and outcome.usage.input_tokens == 2000
