"""Agent records made by hand, for the pure functions that read them (a mandate's decision,
the lower-bound gate): what a test names, the rest as a record with nothing graded has it.

Numbers may be given as floats and ints; a record holds Decimals, as read from its JSON.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from records import AgentRecord

OVERFIT_NONE: dict[str, Any] = {
    "verdict": "none",
    "gap": None,
    "p_value": None,
    "p_holm": None,
    "alpha": None,
    "tests": 0,
    "delta": Decimal("0.15"),
    "newcombe_ci95": None,
    "public": {"rate": None, "total": 0},
    "holdout": {"rate": None, "total": 0},
}


def _exact(value: Any) -> Any:
    if isinstance(value, float):
        return Decimal(str(value))
    if isinstance(value, dict):
        return {k: _exact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_exact(v) for v in value]
    return value


def _split(given: dict[str, Any] | None) -> dict[str, Any] | None:
    if given is None:
        return None
    return {"ci95": [Decimal(0), Decimal(1)], **given}


def suite_json(**given: Any) -> dict[str, Any]:
    """One suite's grades: version 1 of a ticket.classify suite unless said otherwise."""
    suite: dict[str, Any] = {
        "version": 1,
        "capability": "ticket.classify",
        "score": None,
        "threshold": Decimal("0.5"),
        "meets_threshold": False,
        "public": None,
        "holdout": None,
        "overfit": OVERFIT_NONE,
        **given,
    }
    suite["public"], suite["holdout"] = _split(suite["public"]), _split(suite["holdout"])
    return suite


def record_json(**given: Any) -> dict[str, Any]:
    """A record's JSON; `suites` maps suite ids to what `suite_json` takes."""
    suites = given.pop("suites", {})
    return _exact(
        {
            "agent": "acme/triage",
            "agent_version": "1.0.0",
            "eval_id": "ev_test",
            "evaluated_at": "2026-11-20T12:00:00Z",
            "eval_started_at": "2026-11-20T11:59:00Z",
            "stale": False,
            "eval_score": None,
            "eval_score_ci95": None,
            "weakest_suite": None,
            "unverified_capabilities": [],
            "suites": {suite_id: suite_json(**graded) for suite_id, graded in suites.items()},
            "warnings": [],
            "holdout_epochs": {},
            "stale_reasons": [],
            **given,
        }
    )


def agent_record(**given: Any) -> AgentRecord:
    """The record of `record_json(**given)`."""
    return AgentRecord.from_json(record_json(**given))


def decided_record(**fields: Any) -> AgentRecord:
    """A fresh record of a ticket.classify agent scoring 0.85 on the suite `tiny`, evaluated
    2026-11-20: what the mandates' tests decide on, with what a test names changed."""
    record: dict[str, Any] = {
        "eval_score": Decimal("0.85"),
        "weakest_suite": "tiny",
        "unverified_capabilities": [],
        "evaluated_at": "2026-11-20T12:00:00Z",
        "stale": False,
        "stale_reasons": [],
        "warnings": [],
        "suites": {"tiny": {"capability": "ticket.classify", "score": Decimal("0.85")}},
    }
    record.update(fields)
    return agent_record(**record)
