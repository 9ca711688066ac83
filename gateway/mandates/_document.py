"""Mandate documents (schema/mandate.schema.json): loading, validation, the model.

A mandate file gets the same errors as every other file holon reads: the
file, the line, the JSON path, and what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from records import BudgetPeriod, RateLimit
from schema import Document, load_document, parse_document, validate_document, validator
from schema.errors import MandateError
from schema.jsontext import dumps

__all__ = [
    "DEFAULT_MIN_LIVE_CALLS",
    "SELF_ISSUER",
    "Budget",
    "Mandate",
    "load_mandate",
    "mandate_from_dict",
    "parse_mandate",
]

# Answers in the window before `max_live_violation_rate` applies: under it a
# rate says little (one bad answer in ten is 10%), and each answer is still
# held to the contract on its own (a violation is a 502 settled at zero).
DEFAULT_MIN_LIVE_CALLS = 100
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
    agents: tuple[str, ...] | None  # glob patterns; None: any agent
    max_cost_per_call_usd: Decimal
    min_eval_score: Decimal | None = None
    min_eval_score_lower: Decimal | None = None  # docs/integrity.md, "The lower-bound gate"
    min_capability_score: Decimal | None = None
    max_eval_age_days: int | None = None
    deny_on_overfit: bool = False
    # docs/gateway.md, "Live conformance": over the window, once it holds min_live_calls.
    max_live_violation_rate: Decimal | None = None
    min_live_calls: int = DEFAULT_MIN_LIVE_CALLS
    timeout_s: Decimal | None = None
    budget: Budget | None = None
    expires_at: datetime | None = None
    rate_limit: RateLimit | None = None
    # Whose records the requirements read: "self" (this store's) and imported issuers.
    accept_issuers: tuple[str, ...] = (SELF_ISSUER,)
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


def _decimal(value: Any) -> Decimal | None:
    return None if value is None else Decimal(str(value))


def _timestamp(document: Document, text: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise document.error(
            f"not a valid timestamp: {text!r}", ("expires_at",), cls=MandateError
        ) from None
    return parsed.astimezone(UTC)


def _rate_limit(value: dict[str, Any] | None) -> RateLimit | None:
    """The schema bounds each number; a burst omitted is `calls` (a bucket that holds
    one `per`'s worth)."""
    if value is None:
        return None
    calls = int(value["calls"])
    return RateLimit(calls, value["per"], int(value.get("burst", calls)))


def parse_mandate(document: Document) -> Mandate:
    """Validate a loaded document and build the Mandate, or raise MandateError."""
    if not isinstance(document.value, dict):
        raise document.error("expected a mandate object at the top level", cls=MandateError)
    validate_document(document, validator("mandate"), cls=MandateError, what="mandate")
    data: dict[str, Any] = document.value
    budget = data.get("budget")
    expires = data.get("expires_at")
    return Mandate(
        id=data["id"],
        holder=data["holder"],
        capabilities=tuple(data["capabilities"]),
        agents=tuple(data["agents"]) if "agents" in data else None,
        max_cost_per_call_usd=Decimal(data["max_cost_per_call_usd"]),
        min_eval_score=_decimal(data.get("min_eval_score")),
        min_eval_score_lower=_decimal(data.get("min_eval_score_lower")),
        min_capability_score=_decimal(data.get("min_capability_score")),
        max_eval_age_days=data.get("max_eval_age_days"),
        deny_on_overfit=bool(data.get("deny_on_overfit", False)),
        max_live_violation_rate=_decimal(data.get("max_live_violation_rate")),
        min_live_calls=data.get("min_live_calls", DEFAULT_MIN_LIVE_CALLS),
        timeout_s=_decimal(data.get("timeout_s")),
        budget=None if budget is None else Budget(Decimal(budget["amount_usd"]), budget["period"]),
        expires_at=None if expires is None else _timestamp(document, expires),
        rate_limit=_rate_limit(data.get("rate_limit")),
        accept_issuers=tuple(data.get("accept_issuers", (SELF_ISSUER,))),
        document=data,
    )


def load_mandate(path: str | Path) -> Mandate:
    """Read and validate a mandate file (YAML or JSON)."""
    return parse_mandate(load_document(path))


def mandate_from_dict(data: Any, source: str = "<request>") -> Mandate:
    """Validate a mandate that arrived as parsed JSON (the API, the store): same errors as files."""
    return parse_mandate(parse_document(dumps(data), source))
