"""The ledger's writes as values, and the rows they insert (records._ledger applies them).

`Reserve`, `Settle` and `Deny` are what a live call asks of the ledger; a group
commit applies many at once, in Python (records._ledger, records._ledger_sql)
or in PostgreSQL's function (records._ledger_pg), and both build a new row
with `reserve_row` or `deny_row`.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from records._ids import ulid
from records._ledger_values import BudgetPeriod, CallEntry
from records._rate import RateLimit
from records._statuses import LedgerStatus

__all__ = ["Deny", "LedgerWrite", "Reserve", "Settle", "deny_row", "reserve_row"]


# -- the writes, as values (applied alone or in a group) -------------------------


@dataclass(frozen=True)
class Reserve:
    """Reserve `cap` for an allowed call against its budget (if any)."""

    call: CallEntry
    mandate_id: str
    cap: Decimal
    expires_at: datetime
    budget: tuple[BudgetPeriod, Decimal] | None
    details: dict[str, Any]
    # What else the decision knew, by name only: three optional fields in a row are
    # too easy to pass in the wrong place.
    _: KW_ONLY
    mandate_revision: int | None = None  # the revision of the mandate that allowed it
    record_eval_id: str | None = None  # the eval whose record it decided on, if it read one
    certificate_id: str | None = None  # that record's certificate (its own or imported)
    rate_limit: RateLimit | None = None  # the mandate's; its bucket gives a token or refuses


@dataclass(frozen=True)
class Settle:
    """Settle a reservation to min(cost, cap); idempotent."""

    ledger_id: str
    outcome_code: str
    cost: Decimal
    cost_source: str
    latency_ms: float


@dataclass(frozen=True)
class Deny:
    """A call decided `deny` (the agent is never called)."""

    call: CallEntry
    mandate_id: str | None
    reason: str
    details: dict[str, Any]
    mandate_revision: int | None = None  # the revision of `mandate_id` that denied it
    record_eval_id: str | None = None


LedgerWrite = Reserve | Settle | Deny


# -- the rows a write inserts: the one place that maps a write's fields to ledger columns
# (both paths insert every column: records._ledger_sql by the table's column list, the
# PostgreSQL function by name), so a new column is a line here and one in its write.


def reserve_row(write: Reserve, period: str | None, now: datetime) -> dict[str, Any]:
    """The ledger row of an allowed reservation (`period`: its budget's, if it has one)."""
    row = _new_row(write.call, write.mandate_id, period, write.details, now)
    row.update(
        decision="allow",
        status=LedgerStatus.RESERVED,
        reserved_usd=str(write.cap),
        expires_at=write.expires_at,
        mandate_revision=write.mandate_revision,
        record_eval_id=write.record_eval_id,
        certificate_id=write.certificate_id,
    )
    return row


def deny_row(write: Deny, now: datetime) -> dict[str, Any]:
    """The ledger row of a denied call (settled at once, nothing reserved)."""
    row = _new_row(write.call, write.mandate_id, None, write.details, now)
    row.update(
        decision="deny",
        reason=write.reason,
        status=LedgerStatus.DENIED,
        mandate_revision=write.mandate_revision,
        record_eval_id=write.record_eval_id,
        settled_at=now,
    )
    return row


def _new_row(
    call: CallEntry,
    mandate_id: str | None,
    period: str | None,
    details: dict[str, Any],
    now: datetime,
) -> dict[str, Any]:
    return {
        "id": "led_" + ulid(),
        "request_id": call.request_id,
        "caller": call.caller,
        "mandate_id": mandate_id,
        "period": period,
        "agent_id": call.agent_id,
        "agent_version": call.agent_version,
        "capability": call.capability,
        "decision": "",
        "reason": None,
        "details": details,
        "status": "",
        "reserved_usd": "0",
        "cost_usd": "0",
        "cost_source": None,
        "outcome_code": None,
        "latency_ms": None,
        "created_at": now,
        "expires_at": None,
        "settled_at": None,
        "mandate_revision": None,
        "record_eval_id": None,
        "certificate_id": None,
    }
