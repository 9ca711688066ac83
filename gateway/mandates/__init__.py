"""Mandates: documents, and the decision they make on every live call."""

from gateway.mandates._decide import (
    DENY_REASONS,
    RESERVE_REASONS,
    Decision,
    budget_too_small,
    decide_all,
    decide_one,
)
from gateway.mandates._document import (
    Budget,
    Mandate,
    load_mandate,
    mandate_from_dict,
    parse_mandate,
)

__all__ = [
    "DENY_REASONS",
    "RESERVE_REASONS",
    "Budget",
    "Mandate",
    "Decision",
    "budget_too_small",
    "decide_all",
    "decide_one",
    "load_mandate",
    "mandate_from_dict",
    "parse_mandate",
]
