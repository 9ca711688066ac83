"""A cell's attempts as reports carry them: each try at reaching the agent, in order.

The executor keeps every attempt of a call on its outcome (agents.Attempt):
its number, when it started, its outcome code, HTTP status, latency, error
detail and span id. All attempts of a cell carry the cell's request id (so
the agent can recognise a retry), each under a span id of its own (so a
trace, and the agent's own logs, tell them apart).

A store holds whatever was written to it, so each field is kept only when it
is what the executor writes (a code, a count, a time, hex of a span id) and
text is bounded; a report read back (an imported eval) is read the same way,
so what renders from it is what its cells give.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, get_args

from agents import OutcomeCode
from evals.reports._values import text_of

__all__ = ["ATTEMPTS_SHOWN", "AttemptData", "attempt_json", "attempts_of"]

ATTEMPTS_SHOWN = 100  # a cell's tries are 1 + its retries; a store may hold any list
SPAN_ID_CHARS = 32  # a W3C parent id is 16 hex characters; an attempt id no more
STARTED_CHARS = 40  # an ISO 8601 timestamp with milliseconds and a zone
LATENCY_LIMIT_MS = 1e15  # as a cell's latency (evals.reports._data)
_HEX = frozenset("0123456789abcdef")
OUTCOME_CODES = frozenset(get_args(OutcomeCode))


@dataclass(frozen=True)
class AttemptData:
    """One try at reaching the agent, as a report shows it."""

    number: int | None
    started_at: str | None
    outcome: str | None
    http_status: int | None
    latency_ms: float | None
    span_id: str | None
    error: str | None


def _count(value: Any, below: int) -> int | None:
    is_count = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < below
    return value if is_count else None


def _latency(value: Any) -> float | None:
    if not isinstance(value, float | int | Decimal) or isinstance(value, bool):
        return None
    if isinstance(value, Decimal) and not value.is_finite():
        return None
    if not -LATENCY_LIMIT_MS < value < LATENCY_LIMIT_MS:
        return None
    number = float(value)
    return number if math.isfinite(number) and number >= 0 else None


def _span_id(value: Any) -> str | None:
    # Hex only: an id is never text an agent wrote.
    if isinstance(value, str) and 0 < len(value) <= SPAN_ID_CHARS and set(value) <= _HEX:
        return value
    return None


def _started(value: Any) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return text_of(value, STARTED_CHARS)


def attempts_of(value: Any) -> tuple[AttemptData, ...]:
    """The attempts of a stored outcome's `attempts` (or a report cell's `attempt_log`)."""
    if not isinstance(value, list):
        return ()
    out = []
    for item in value[:ATTEMPTS_SHOWN]:
        if not isinstance(item, dict):
            continue
        # A stored outcome names it `code`, a report `outcome`.
        code = item.get("code", item.get("outcome"))
        error = item.get("error")
        out.append(
            AttemptData(
                number=_count(item.get("number"), 10**6),
                started_at=_started(item.get("started_at")),
                outcome=code if isinstance(code, str) and code in OUTCOME_CODES else None,
                http_status=_count(item.get("http_status"), 1000),
                latency_ms=_latency(item.get("latency_ms")),
                span_id=_span_id(item.get("span_id")),
                error=None if error is None else text_of(error),
            )
        )
    return tuple(out)


def attempt_json(attempt: AttemptData, milliseconds: Any) -> dict[str, Any]:
    """One attempt of a report's cell (`milliseconds`: how the report writes a time)."""
    return {
        "number": attempt.number,
        "started_at": attempt.started_at,
        "outcome": attempt.outcome,
        "http_status": attempt.http_status,
        "latency_ms": None if attempt.latency_ms is None else milliseconds(attempt.latency_ms),
        "span_id": attempt.span_id,
        "error": attempt.error,
    }
