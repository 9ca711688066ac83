"""Mandates: documents, and the decision they make on every live call."""

from gateway.mandates._decide import (
    DENY_REASONS,
    RESERVE_REASONS,
    Decision,
    budget_too_small,
    decide_one,
)
from gateway.mandates._document import (
    Budget,
    Mandate,
    load_mandate,
    mandate_from_dict,
    parse_mandate,
)
from gateway.mandates._fields import FIELDS, MandateField, field_text

__all__ = [
    "DENY_REASONS",
    "FIELDS",
    "RESERVE_REASONS",
    "Budget",
    "Mandate",
    "MandateField",
    "Decision",
    "budget_too_small",
    "decide_one",
    "field_text",
    "load_mandate",
    "mandate_from_dict",
    "parse_mandate",
]
