"""The mandate model: what a granted mandate requires (schema/mandate.schema.json).

Built from a document by `_document.parse_mandate`, field by field as
`_fields.FIELDS` declares them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fnmatch import fnmatchcase
from typing import Any

from records import BudgetPeriod, RateLimit

__all__ = [
    "DEFAULT_MIN_CANARIES",
    "DEFAULT_MIN_LIVE_CALLS",
    "SELF_ISSUER",
    "Budget",
    "Mandate",
]

# Answers in the window before `max_live_violation_rate` applies: under it a
# rate says little (one bad answer in ten is 10%), and each answer is still
# held to the contract on its own (a violation is a 502 settled at zero).
DEFAULT_MIN_LIVE_CALLS = 100
# Canaries graded since the record's eval before `min_live_score` applies: below it a
# rate is too coarse to deny on (the drift test itself needs no such floor).
DEFAULT_MIN_CANARIES = 50
# How a mandate names this store's own records in `accept_issuers` (the default).
SELF_ISSUER = "self"


@dataclass(frozen=True)
class Budget:
    amount_usd: Decimal
    period: BudgetPeriod


@dataclass(frozen=True)
class Mandate:
    id: str
    holder: str
    capabilities: tuple[str, ...]
    max_cost_per_call_usd: Decimal
    agents: tuple[str, ...] | None = None  # glob patterns; None: any agent
    min_eval_score: Decimal | None = None
    min_eval_score_lower: Decimal | None = None  # docs/integrity.md, "The lower-bound gate"
    min_capability_score: Decimal | None = None
    max_eval_age_days: int | None = None
    deny_on_overfit: bool = False
    # docs/integrity.md, "Canaries": on by default, so a mandate fails closed.
    deny_on_drift: bool = True
    min_live_score: Decimal | None = None
    min_canaries: int = DEFAULT_MIN_CANARIES
    # docs/gateway.md, "Live conformance": over the window, once it holds min_live_calls.
    max_live_violation_rate: Decimal | None = None
    min_live_calls: int = DEFAULT_MIN_LIVE_CALLS
    timeout_s: Decimal | None = None
    budget: Budget | None = None
    expires_at: datetime | None = None
    rate_limit: RateLimit | None = None
    # Whose records the requirements read: "self" (this store's) and imported issuers.
    accept_issuers: tuple[str, ...] = (SELF_ISSUER,)
    # docs/certificates.md, "Revocation of imports": an imported record whose issuer's
    # revocation list was never read may be revoked already, so by default it is not read.
    accept_unchecked_revocation: bool = False
    document: dict[str, Any] | None = None  # as granted, for storage and display

    @property
    def needs_record(self) -> bool:
        """Whether any requirement reads the agent's record (then a missing one denies)."""
        return (
            self.min_eval_score is not None
            or self.min_eval_score_lower is not None
            or self.min_capability_score is not None
            or self.max_eval_age_days is not None
            or self.deny_on_overfit
            or self.min_live_score is not None
        )

    @property
    def accepts_imported(self) -> bool:
        """Whether a record imported from another issuer may vouch for an agent."""
        return any(i != SELF_ISSUER for i in self.accept_issuers)

    def accepts(self, issuer: str) -> bool:
        return issuer in self.accept_issuers

    @property
    def needs_live(self) -> bool:
        """Whether the decision reads the agent's live conformance (records._conformance)."""
        return self.max_live_violation_rate is not None

    def allows_agent(self, agent_id: str) -> bool:
        return self.agents is None or any(fnmatchcase(agent_id, p) for p in self.agents)
