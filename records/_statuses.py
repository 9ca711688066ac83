"""The statuses of what holon keeps, each declared once.

A member is its stored text and its JSON: it compares equal to, formats as and
serializes as its value, so rows, views and documents read as before. The
PostgreSQL functions of migration 0013 spell the ledger's statuses in SQL.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["CellStatus", "EvalStatus", "LedgerStatus"]


class EvalStatus(StrEnum):
    """An eval: running until its last cell is recorded (done), or cancelled."""

    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"


class CellStatus(StrEnum):
    """One cell of an eval: pending, claimed by a worker (running), recorded (done)."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"


class LedgerStatus(StrEnum):
    """A ledger row: `reserved` (decided, calling), `settled` (outcome known), `expired`
    (the reservation outlived the call's deadline: charged what it reserved), `denied`
    (never called)."""

    RESERVED = "reserved"
    SETTLED = "settled"
    EXPIRED = "expired"
    DENIED = "denied"
