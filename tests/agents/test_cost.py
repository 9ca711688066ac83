"""Cost: priced by the gateway from the manifest, the agent's own figure only without pricing."""

from __future__ import annotations

from decimal import Decimal

import pytest

from agents import CallLimits, Executor, Pricing, Usage, price
from agents._cost import exceeds_cap, preflight_exceeds
from agents._wire import AnswerError, read_answer
from tests.agents.conftest import Faults, make_agent

PRICING = Pricing(
    per_call_usd=Decimal("0.002"),
    per_1k_input_tokens_usd=Decimal("0.0005"),
    per_1k_output_tokens_usd=Decimal("0.0015"),
)


def test_priced_cost_is_exact() -> None:
    agent = make_agent("http://a.example/", pricing=PRICING)
    cost, source = price(agent, Usage(input_tokens=1200, output_tokens=80, cost_usd=Decimal(9)))
    # 0.002 + 1.2 * 0.0005 + 0.08 * 0.0015, exactly; the reported 9 is ignored.
    assert (cost, source) == (Decimal("0.002") + Decimal("0.0006") + Decimal("0.00012"), "priced")
    assert cost == Decimal("0.00272")


def test_priced_without_usage_is_the_per_call_price() -> None:
    agent = make_agent("http://a.example/", pricing=PRICING)
    assert price(agent, None) == (Decimal("0.002"), "priced")
    assert price(agent, Usage(output_tokens=1000)) == (Decimal("0.0035"), "priced")


def test_token_prices_are_optional() -> None:
    agent = make_agent("http://a.example/", pricing=Pricing(per_call_usd=Decimal("0.01")))
    assert price(agent, Usage(input_tokens=10**9)) == (Decimal("0.01"), "priced")


def test_reported_only_without_pricing_else_none() -> None:
    agent = make_agent("http://a.example/")
    assert price(agent, Usage(cost_usd=Decimal("0.0031"))) == (Decimal("0.0031"), "reported")
    assert price(agent, Usage(input_tokens=5)) == (Decimal(0), "none")
    assert price(agent, None) == (Decimal(0), "none")


def test_huge_token_counts_stay_exact() -> None:
    agent = make_agent("http://a.example/", pricing=PRICING)
    cost, _ = price(agent, Usage(input_tokens=2**63 - 1, output_tokens=2**63 - 1))
    expected = (
        Decimal("0.002")
        + Decimal(2**63 - 1) * Decimal("0.0000005")
        + Decimal(2**63 - 1) * Decimal("0.0000015")
    )
    assert cost == expected


def test_cap_is_strict_and_none_means_no_cap() -> None:
    assert not exceeds_cap(Decimal("0.05"), Decimal("0.05"))
    assert exceeds_cap(Decimal("0.0500001"), Decimal("0.05"))
    assert not exceeds_cap(Decimal(10**9), None)
    agent = make_agent("http://a.example/", pricing=PRICING)
    assert preflight_exceeds(agent, Decimal("0.001"))
    assert not preflight_exceeds(agent, Decimal("0.002"))
    assert not preflight_exceeds(agent, None)
    assert not preflight_exceeds(make_agent("http://a.example/"), Decimal(0))


def test_limits_refuse_float_money() -> None:
    with pytest.raises(TypeError):
        CallLimits(max_cost_usd=0.05)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        CallLimits(max_cost_usd=Decimal(-1))


@pytest.mark.anyio
async def test_preflight_price_over_cap_does_not_call_the_agent(
    executor: Executor, faults: Faults
) -> None:
    agent = faults.agent("ok", pricing=Pricing(per_call_usd=Decimal("0.10")))
    outcome = await executor.execute(
        agent, "echo", {"n": 1}, CallLimits(max_cost_usd=Decimal("0.05"), unreachable_retries=2)
    )
    assert outcome.code == "cost_exceeded"
    assert outcome.attempts == () and outcome.attempt_count == 0
    assert outcome.cost_usd == 0 and outcome.cost_source == "none"
    assert "not called" in (outcome.error or "")
    assert faults.recorder.requests == []
    # Same agent, a cap the price fits under: it is called.
    allowed = await executor.execute(
        agent, "echo", {"n": 1}, CallLimits(max_cost_usd=Decimal("0.50"))
    )
    assert allowed.ok and len(faults.recorder.requests) == 1


@pytest.mark.anyio
async def test_over_reported_cost_without_pricing_is_cost_exceeded(
    executor: Executor, faults: Faults
) -> None:
    outcome = await executor.execute(
        faults.agent("expensive"), "echo", {}, CallLimits(max_cost_usd=Decimal("0.05"))
    )
    assert outcome.code == "cost_exceeded" and outcome.output is None
    assert (outcome.cost_usd, outcome.cost_source) == (Decimal("1.00"), "reported")
    assert "exceeds the cap 0.05" in (outcome.error or "")


@pytest.mark.anyio
async def test_with_pricing_the_priced_cost_wins_over_the_report(
    executor: Executor, faults: Faults
) -> None:
    agent = faults.agent("expensive", pricing=PRICING)  # reports 1.00, 2000 in, 1000 out
    outcome = await executor.execute(agent, "echo", {}, CallLimits(max_cost_usd=Decimal("0.05")))
    assert outcome.code == "ok" and outcome.output == "pricey"
    assert outcome.cost_usd == Decimal("0.002") + Decimal("0.001") + Decimal("0.0015")
    assert outcome.cost_source == "priced"
    assert outcome.usage is not None and outcome.usage.cost_usd == Decimal("1.00")


@pytest.mark.anyio
async def test_priced_cost_over_the_cap(executor: Executor, faults: Faults) -> None:
    agent = faults.agent("expensive", pricing=PRICING)  # priced 0.0045
    outcome = await executor.execute(agent, "echo", {}, CallLimits(max_cost_usd=Decimal("0.004")))
    assert outcome.code == "cost_exceeded"
    assert (outcome.cost_usd, outcome.cost_source) == (Decimal("0.0045"), "priced")


@pytest.mark.anyio
async def test_no_cap_means_any_cost_is_fine(executor: Executor, faults: Faults) -> None:
    outcome = await executor.execute(faults.agent("expensive"), "echo", {}, CallLimits())
    assert outcome.ok and outcome.cost_usd == Decimal("1.00")


@pytest.mark.parametrize(
    ("reported", "cost"),
    [
        ("0.0015", Decimal("0.0015")),
        (Decimal("1.5E-3"), Decimal("0.0015")),  # an exponent form is kept as plain digits
        (Decimal("1E+20"), Decimal("100000000000000000000")),
        (3, Decimal(3)),
    ],
)
def test_a_reported_cost_is_a_plain_amount(reported: object, cost: Decimal) -> None:
    _, usage = read_answer({"output": 1, "usage": {"cost_usd": reported}})
    assert usage is not None and usage.cost_usd == cost
    assert str(usage.cost_usd) == str(cost)  # money is written the same way everywhere


@pytest.mark.parametrize(
    "reported", [Decimal("1E+4000"), Decimal("1E-4000"), Decimal("1E+41"), "1e3", "-1", True]
)
def test_a_reported_cost_that_is_no_amount_is_malformed(reported: object) -> None:
    with pytest.raises(AnswerError, match="cost_usd"):
        read_answer({"output": 1, "usage": {"cost_usd": reported}})


def test_pricing_at_the_limits_stays_exact() -> None:
    agent = make_agent(
        "http://agent.invalid/",
        pricing=Pricing(
            per_call_usd=Decimal("999999999.9999999999"),
            per_1k_input_tokens_usd=Decimal("999999999.9999999999"),
            per_1k_output_tokens_usd=Decimal("0.0000000001"),
        ),
    )
    most = 2**63 - 1
    cost, source = price(agent, Usage(input_tokens=most, output_tokens=most))
    assert source == "priced" and cost > 0
    assert exceeds_cap(cost, Decimal("1E+4000")) is False
    assert exceeds_cap(cost, Decimal("1E-4000")) is True


def test_per_million_prices_are_exact() -> None:
    pricing = Pricing(
        per_1m_input_tokens_usd=Decimal("0.15"), per_1m_output_tokens_usd=Decimal("0.6")
    )
    agent = make_agent("http://a.example/", pricing=pricing)
    assert pricing.prices_tokens and not Pricing(per_call_usd=Decimal(1)).prices_tokens
    cost, source = price(agent, Usage(input_tokens=1000, output_tokens=200))
    assert (cost, source) == (Decimal("0.00027"), "priced")
    huge, _ = price(agent, Usage(input_tokens=2**63 - 1))
    assert huge == Decimal(2**63 - 1) * Decimal("0.00000015")
