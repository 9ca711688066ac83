"""Every deny reason of docs/gateway.md, with the numbers that decided it (a pure function)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from gateway.live import denial_error
from gateway.mandates import DENY_REASONS, Decision, decide_one, mandate_from_dict
from records import AgentRecord
from schema.errors import BudgetExhausted, Denied, MandateError
from tests.records._record import decided_record

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _mandate(**fields: Any) -> Any:
    document: dict[str, Any] = {
        "schema_version": 1,
        "id": "m1",
        "holder": "bot",
        "capabilities": ["ticket.classify"],
        "max_cost_per_call_usd": "0.05",
    }
    document.update(fields)
    return mandate_from_dict(document)


_record = decided_record


def _decide(mandate: Any, record: AgentRecord | None = None, **kw: Any) -> Decision:
    args: dict[str, Any] = {
        "agent_id": "acme/triage",
        "agent_version": "1.0.0",
        "capability": "ticket.classify",
        "record": record,
        "now": NOW,
    }
    args.update(kw)
    return decide_one(mandate, **args)


def test_no_requirements_allow_without_a_record() -> None:
    assert _decide(_mandate()).allow


@pytest.mark.parametrize(
    ("fields", "record", "kw", "reason", "numbers"),
    [
        (
            {"expires_at": "2026-11-29T11:59:59Z"},
            None,
            {},
            "mandate_expired",
            {"expires_at": "2026-11-29T11:59:59Z"},
        ),
        (
            {},
            None,
            {"capability": "invoice.extract"},
            "capability_not_allowed",
            {"capability": "invoice.extract", "allowed": ["ticket.classify"]},
        ),
        (
            {"agents": ["other/*"]},
            None,
            {},
            "agent_not_allowed",
            {"agent": "acme/triage", "allowed": ["other/*"]},
        ),
        (
            {"min_eval_score": 0.5},
            None,
            {},
            "not_evaluated",
            {"agent": "acme/triage", "agent_version": "1.0.0"},
        ),
        (
            {"min_eval_score": 0.5},
            _record(eval_score=None, unverified_capabilities=["x.y"]),
            {},
            "unverified_capability",
            {"unverified_capabilities": ["x.y"]},
        ),
        (
            {"min_capability_score": 0.5},
            _record(suites={}),
            {},
            "unverified_capability",
            {"capability": "ticket.classify"},
        ),
        (
            {"min_eval_score": 0.5},
            _record(stale=True, stale_reasons=["graded on tiny v1"]),
            {},
            "eval_stale",
            {"stale_reasons": ["graded on tiny v1"]},
        ),
        (
            {"max_eval_age_days": 7},
            _record(),
            {},
            "eval_stale",
            {"age_days": Decimal("9.00"), "max_eval_age_days": 7},
        ),
        (
            {"min_eval_score": 0.9},
            _record(),
            {},
            "eval_score_below_minimum",
            {
                "eval_score": Decimal("0.85"),
                "min_eval_score": Decimal("0.9"),
                "weakest_suite": "tiny",
            },
        ),
        (
            {"min_eval_score_lower": 0.8},
            _record(
                holdout_evals={"tiny": 3},
                suites={
                    "tiny": {
                        "capability": "ticket.classify",
                        "score": Decimal("0.85"),
                        "holdout": {"passed": 51, "total": 60, "rate": Decimal("0.85")},
                    }
                },
            ),
            {},
            "eval_score_lower_below_minimum",
            {
                "eval_score_lower": Decimal("0.6770"),
                "holdout_evals": {"tiny": 3},
                "min_eval_score_lower": Decimal("0.8"),
            },
        ),
        (
            {"min_capability_score": 0.9},
            _record(),
            {},
            "capability_score_below_minimum",
            {
                "capability_score": Decimal("0.85"),
                "min_capability_score": Decimal("0.9"),
                "suite": "tiny",
            },
        ),
        (
            {"deny_on_overfit": True},
            _record(warnings=[{"code": "overfit", "suite": "tiny", "detail": "gap"}]),
            {},
            "overfit_warning",
            {"warnings": [{"code": "overfit", "suite": "tiny", "detail": "gap"}]},
        ),
    ],
)
def test_each_deny_reason_with_its_numbers(
    fields: dict[str, Any],
    record: AgentRecord | None,
    kw: dict[str, Any],
    reason: str,
    numbers: dict[str, Any],
) -> None:
    decision = _decide(_mandate(**fields), record, **kw)
    assert not decision.allow and decision.reason == reason
    for key, value in numbers.items():
        assert decision.numbers[key] == value, key


def test_meeting_every_requirement_allows() -> None:
    mandate = _mandate(
        min_eval_score=0.85,
        min_capability_score=0.8,
        max_eval_age_days=30,
        deny_on_overfit=True,
        agents=["acme/*"],
        expires_at="2027-01-01T00:00:00Z",
    )
    assert _decide(mandate, _record()).allow


def test_a_stale_record_fails_closed_even_when_its_score_is_high() -> None:
    decision = _decide(_mandate(min_eval_score=0.1), _record(stale=True, stale_reasons=["x"]))
    assert decision.reason == "eval_stale"


def test_the_denial_names_the_furthest_mandate_and_lists_all() -> None:
    decisions = [
        Decision("a", False, "capability_not_allowed", {"capability": "c"}),
        Decision("b", False, "eval_score_below_minimum", {"eval_score": 0.5}),
    ]
    error = denial_error(decisions, subject="x")
    assert type(error) is Denied and error.code == "eval_score_below_minimum"
    assert error.http_status == 403 and error.details["mandate"] == "b"
    assert [m["reason"] for m in error.details["mandates"]] == [
        "capability_not_allowed",
        "eval_score_below_minimum",
    ]
    budget = denial_error([Decision("a", False, "budget_exhausted", {})], subject="x")
    assert isinstance(budget, BudgetExhausted) and budget.http_status == 402
    nothing = denial_error([], subject="x")
    assert nothing.code == "no_mandate" and nothing.http_status == 403


def test_reasons_are_ordered_as_checked() -> None:
    assert DENY_REASONS[0] == "no_mandate" and DENY_REASONS[-2:] == (
        "budget_exhausted",
        "rate_limited",
    )


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"max_cost_per_call_usd": 0.05}, "$.max_cost_per_call_usd"),
        ({"capabilities": []}, "$.capabilities"),
        ({"agents": ["ACME/*"]}, "$.agents[0]"),
        ({"min_eval_score": 1.5}, "$.min_eval_score"),
        ({"budget": {"amount_usd": "10", "period": "fortnight"}}, "$.budget.period"),
        ({"expires_at": "tomorrow"}, "$.expires_at"),
        ({"surprise": 1}, "$.surprise"),
    ],
)
def test_bad_mandates_name_the_path(change: dict[str, Any], path: str) -> None:
    with pytest.raises(MandateError) as caught:
        _mandate(**change)
    assert caught.value.details["path"] == path
    assert "invalid mandate" in caught.value.message
