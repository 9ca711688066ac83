"""What a call costs the caller: priced by the gateway, never taken on the agent's word.

When the manifest has pricing, the cost is
``per_call + input_tokens/1000 * per_1k_in + output_tokens/1000 * per_1k_out``
(or ``tokens/1000000 * per_1m`` for a side priced per million tokens),
exact in Decimal, from the tokens the agent reported (missing counts are 0).
An agent's own `cost_usd` is used only when the manifest has no pricing
(`reported`); with neither the cost is 0 (`none`).
"""

from __future__ import annotations

from decimal import Context, Decimal

from agents._manifest import Manifest
from agents._outcome import CostSource, Usage

__all__ = ["exceeds_cap", "preflight_exceeds", "price"]

_THOUSAND = Decimal(1000)
_MILLION = Decimal(1000000)
# Token counts are bounded (< 2**63) and prices are short decimals: at this
# precision every step is exact, whatever the caller's ambient context.
_EXACT = Context(prec=120)


def price(agent: Manifest, usage: Usage | None) -> tuple[Decimal, CostSource]:
    """The cost of one answered call and where the number came from."""
    pricing = agent.pricing
    if pricing is not None:
        cost = pricing.per_call_usd
        if usage is not None:
            cost = _EXACT.add(cost, _tokens(usage.input_tokens, pricing.per_1k_input_tokens_usd))
            cost = _EXACT.add(cost, _tokens(usage.output_tokens, pricing.per_1k_output_tokens_usd))
            cost = _EXACT.add(
                cost, _tokens(usage.input_tokens, pricing.per_1m_input_tokens_usd, _MILLION)
            )
            cost = _EXACT.add(
                cost, _tokens(usage.output_tokens, pricing.per_1m_output_tokens_usd, _MILLION)
            )
        return cost, "priced"
    if usage is not None and usage.cost_usd is not None:
        return usage.cost_usd, "reported"
    return Decimal(0), "none"


def _tokens(count: int | None, per: Decimal | None, unit: Decimal = _THOUSAND) -> Decimal:
    if not count or per is None:
        return Decimal(0)
    return _EXACT.multiply(_EXACT.divide(Decimal(count), unit), per)


def exceeds_cap(cost: Decimal, cap: Decimal | None) -> bool:
    """True when `cost` is strictly over the enforced cap (None: no cap)."""
    return cap is not None and cost > cap


def preflight_exceeds(agent: Manifest, cap: Decimal | None) -> bool:
    """True when the fixed per-call price alone is over the cap: the agent is then not called."""
    return agent.pricing is not None and exceeds_cap(agent.pricing.per_call_usd, cap)
