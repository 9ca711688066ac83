"""Live conformance: per agent and capability, live answers and contract violations.

The gateway checks every live call's input and its agent's output against
the capability's contract (docs/gateway.md, "The contract on live calls").
What it found is counted here, in the ledger's own transaction: a
settlement whose outcome is `ok` or `invalid_output` adds one answer (and
one violation for `invalid_output`); a denial for `invalid_input` adds one
input violation (the caller's, never counted against the agent). So the
counts are exact whatever process settled the call, cost no transaction of
their own, and need no scan of the ledger to read.

Counts are kept per UTC day. The window is the last `LIVE_WINDOW_DAYS` days,
today included: reading it sums at most that many rows per (agent,
capability) by primary key. Days are short rows (one per agent, capability
and day that saw a call) and kept: they are the history.

This layer knows the two codes as the ledger writes them; what a contract
is and how it is checked belong to `evals` and `gateway`.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from sqlalchemy import func, select, text

from records._models import LiveConformanceRow
from records._registry import Registry
from records._types import utcnow

__all__ = [
    "INVALID_INPUT",
    "INVALID_OUTPUT",
    "LIVE_WINDOW_DAYS",
    "ConformanceRegistry",
    "LiveConformance",
    "count_live",
    "live_window_start",
]

INVALID_INPUT = "invalid_input"  # the deny reason of an input that breaks the contract
INVALID_OUTPUT = "invalid_output"  # the outcome code of an output that breaks it
# The outcomes that are an answer checked against the contract.
ANSWERED = frozenset({"ok", INVALID_OUTPUT})
LIVE_WINDOW_DAYS = 7
RATE_PLACES = Decimal("0.000001")


def live_window_start(now: datetime) -> str:
    """The first day of the window that ends today (UTC), as stored."""
    return (now - timedelta(days=LIVE_WINDOW_DAYS - 1)).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class LiveConformance:
    """One agent's live answers for one capability over the window."""

    agent_id: str
    capability: str
    since: str  # the window's first day (UTC)
    calls: int = 0
    violations: int = 0
    input_violations: int = 0
    check_failures: int = 0  # answers passed on that failed a reference-free check

    @property
    def broken(self) -> int:
        """The answers against the agent: outside the output schema, or failing a check
        that reads only input and output."""
        return self.violations + self.check_failures

    @property
    def rate(self) -> Decimal | None:
        """broken / calls, or None before the first call."""
        if self.calls == 0:
            return None
        # A check's failure is counted after its answer's settlement: at a day's edge the
        # window may hold the one without the other, never more than every answer.
        broken = min(self.broken, self.calls)
        rate = (Decimal(broken) / Decimal(self.calls)).quantize(RATE_PLACES)
        return rate.normalize()  # 0.5, not 0.500000

    def to_json(self) -> dict[str, Any]:
        return {
            "window_days": LIVE_WINDOW_DAYS,
            "since": self.since,
            "calls": self.calls,
            "violations": self.violations,
            "rate": self.rate,
            "input_violations": self.input_violations,
            "check_failures": self.check_failures,
        }


def _day(moment: datetime) -> str:
    return moment.date().isoformat()


_NAMES = ("agent_id", "capability", "day", "calls", "violations", "input_violations")


def _upsert(postgres: bool) -> str:
    marks = ", ".join(f"%({n})s" if postgres else f":{n}" for n in _NAMES)
    return (
        f"INSERT INTO live_conformance ({', '.join(_NAMES)}) VALUES ({marks})"
        " ON CONFLICT (agent_id, capability, day) DO UPDATE SET"
        " calls = live_conformance.calls + excluded.calls,"
        " violations = live_conformance.violations + excluded.violations,"
        " input_violations = live_conformance.input_violations + excluded.input_violations"
    )


# The statement in each driver's parameter style (psycopg, sqlite3).
_UPSERT = {True: _upsert(True), False: _upsert(False)}


def count_live(
    cursor: Any,
    postgres: bool,
    settled: Iterable[Mapping[str, Any]],
    denied: Iterable[Mapping[str, Any]],
    now: datetime,
) -> None:
    """Add the counts of ledger rows just settled or denied, in the ledger's transaction.

    One upsert per (agent, capability) touched, in key order (two processes'
    groups lock counter rows in the same order, after their budget rows).
    """
    counts: dict[tuple[str, str], list[int]] = {}
    for row in settled:
        if row.get("outcome_code") in ANSWERED and row.get("agent_id"):
            held = counts.setdefault((row["agent_id"], row["capability"]), [0, 0, 0])
            held[0] += 1
            held[1] += row["outcome_code"] == INVALID_OUTPUT
    for row in denied:
        if row.get("reason") == INVALID_INPUT:
            held = counts.setdefault((row.get("agent_id") or "", row["capability"]), [0, 0, 0])
            held[2] += 1
    if not counts:
        return
    day = _day(now)
    cursor.executemany(
        _UPSERT[postgres],
        [
            dict(zip(_NAMES, (agent, capability, day, *held), strict=True))
            for (agent, capability), held in sorted(counts.items())
        ],
    )


class ConformanceRegistry(Registry):
    def window(
        self,
        agent_id: str | None = None,
        capability: str | None = None,
        *,
        now: datetime | None = None,
    ) -> builtins.list[LiveConformance]:
        """The window's counts by (agent, capability), in that order; filtered if asked.

        Routed calls refused for their input have no agent: their agent id is "".
        """
        since = live_window_start(now or utcnow())
        t = LiveConformanceRow
        query = (
            select(
                t.agent_id,
                t.capability,
                func.sum(t.calls),
                func.sum(t.violations),
                func.sum(t.input_violations),
                func.sum(t.check_failures),
            )
            .where(t.day >= since)
            .group_by(t.agent_id, t.capability)
            .order_by(t.agent_id, t.capability)
        )
        if agent_id is not None:
            query = query.where(t.agent_id == agent_id)
        if capability is not None:
            query = query.where(t.capability == capability)
        with self._store.read() as session:
            rows = session.execute(query).all()
        return [
            LiveConformance(agent, cap, since, int(calls), int(bad), int(inputs), int(checks))
            for agent, cap, calls, bad, inputs, checks in rows
        ]

    def check_failed(
        self, agent_id: str, capability: str, failures: int = 1, *, now: datetime | None = None
    ) -> None:
        """Count live answers that failed a reference-free check (the gateway grades them
        after the answer; the settlement counted each as an answer already)."""
        statement = text(
            "INSERT INTO live_conformance (agent_id, capability, day, calls, violations,"
            " input_violations, check_failures) VALUES (:agent, :capability, :day, 0, 0, 0,"
            " :failures) ON CONFLICT (agent_id, capability, day) DO UPDATE SET"
            " check_failures = live_conformance.check_failures + excluded.check_failures"
        )
        values = {
            "agent": agent_id,
            "capability": capability,
            "day": _day(now or utcnow()),
            "failures": failures,
        }
        with self._store.write() as session:
            session.execute(statement, values)

    def of(self, agent_id: str, capability: str, *, now: datetime | None = None) -> LiveConformance:
        """One agent's counts for one capability (zero when it had no live call)."""
        moment = now or utcnow()
        found = self.window(agent_id, capability, now=moment)
        return (
            found[0] if found else LiveConformance(agent_id, capability, live_window_start(moment))
        )
