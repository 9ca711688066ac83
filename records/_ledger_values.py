"""The ledger's values: calls, budget standings, ledger entries, calendar periods."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, get_args

from records._rows import from_mapping
from records._statuses import LedgerStatus
from records._types import utc_text

__all__ = [
    "EXPIRED_COST_SOURCE",
    "EXPIRED_REASON",
    "BudgetPeriod",
    "BudgetState",
    "DECISION_CODES",
    "CallEntry",
    "DecisionCode",
    "LedgerEntry",
    "entry_from_row",
    "period_key",
]

BudgetPeriod = Literal["day", "week", "month", "year"]
# A live call's decision as the ledger keeps it and the API shows it (a filter too).
DecisionCode = Literal["allow", "deny"]
DECISION_CODES: tuple[DecisionCode, ...] = get_args(DecisionCode)
ZERO = Decimal(0)

# An expired reservation's row: charged what it reserved (its `cost_source`), and why
# (its `reason`): the process died after the agent may have been called.
EXPIRED_COST_SOURCE = "reserved"
EXPIRED_REASON = "agent_may_have_been_called"


def period_key(period: BudgetPeriod, when: datetime) -> str:
    """The calendar period (UTC) that `when` falls in: 2026-11-29, 2026-W48, 2026-11, 2026."""
    if period == "day":
        return when.strftime("%Y-%m-%d")
    if period == "week":
        year, week, _ = when.isocalendar()
        return f"{year}-W{week:02d}"
    if period == "month":
        return when.strftime("%Y-%m")
    return when.strftime("%Y")


@dataclass(frozen=True)
class CallEntry:
    """What a live call is about, before anything is known of its outcome."""

    request_id: str
    caller: str
    capability: str
    agent_id: str | None
    agent_version: str | None


@dataclass(frozen=True)
class BudgetState:
    """A budget's standing in one period; `exhausted` when a reservation was refused."""

    mandate_id: str
    period: str
    amount: Decimal
    spent: Decimal
    reserved: Decimal
    cap: Decimal
    exhausted: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "mandate": self.mandate_id,
            "period": self.period,
            "budget_usd": str(self.amount),
            "spent_usd": str(self.spent),
            "reserved_usd": str(self.reserved),
            "remaining_usd": str(max(self.amount - self.spent - self.reserved, ZERO)),
            "cap_usd": str(self.cap),
        }


def budget_refusal(
    mandate_id: str,
    period: str,
    amount: Decimal,
    spent: Decimal,
    reserved: Decimal,
    cap: Decimal,
) -> BudgetState | None:
    """The budget's refusal of a reservation of `cap`, or None when it affords one: the one
    judgement of the reservation (records._ledger; PostgreSQL's function does the same
    sum) and of `holon mandates check`. A hold left by a crashed call counts until it
    expires, and then as spent."""
    if spent + reserved + cap > amount:
        return BudgetState(mandate_id, period, amount, spent, reserved, cap, True)
    return None


@dataclass(frozen=True)
class LedgerEntry:
    id: str
    request_id: str
    caller: str
    mandate_id: str | None
    period: str | None
    agent_id: str | None
    agent_version: str | None
    capability: str
    decision: DecisionCode
    reason: str | None
    details: dict[str, Any]
    status: LedgerStatus
    reserved_usd: Decimal
    cost_usd: Decimal
    cost_source: str | None
    outcome_code: str | None
    latency_ms: float | None
    created_at: datetime
    expires_at: datetime | None
    settled_at: datetime | None
    mandate_revision: int | None = None  # the mandate's revision that allowed or denied it
    record_eval_id: str | None = None  # the eval whose record the decision read
    certificate_id: str | None = None  # the certificate of that record (an allowed call)

    def to_json(self) -> dict[str, Any]:
        """Schema `entities/ledger-row`: the API's and the CLI's names (`at`, `mandate`,
        `agent`, `outcome`), money as decimal text."""
        return {
            "id": self.id,
            "request_id": self.request_id,
            "at": utc_text(self.created_at),
            "caller": self.caller,
            "mandate": self.mandate_id,
            "mandate_revision": self.mandate_revision,
            "record_eval_id": self.record_eval_id,
            "certificate_id": self.certificate_id,
            "agent": self.agent_id,
            "agent_version": self.agent_version,
            "capability": self.capability,
            "decision": self.decision,
            "reason": self.reason,
            "status": self.status,
            "outcome": self.outcome_code,
            "reserved_usd": str(self.reserved_usd),
            "cost_usd": str(self.cost_usd),
            "cost_source": self.cost_source,
            "latency_ms": None if self.latency_ms is None else round(self.latency_ms, 3),
            "period": self.period,
            "details": self.details,
        }


def entry_from_row(row: Mapping[Any, Any]) -> LedgerEntry:
    return from_mapping(
        LedgerEntry,
        row,
        status=LedgerStatus(row["status"]),
        reserved_usd=Decimal(row["reserved_usd"]),
        cost_usd=Decimal(row["cost_usd"]),
        certificate_id=row.get("certificate_id"),
    )
