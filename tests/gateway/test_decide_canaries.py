"""Mandates on what canaries found: drift (`deny_on_drift`) and the live score."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from evals import author_record
from gateway.mandates import Decision, decide_one, mandate_from_dict
from records import AgentRecord
from tests.records._record import decided_record

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CAPABILITY = "ticket.classify"


def _mandate(**fields: Any) -> Any:
    document: dict[str, Any] = {
        "schema_version": 1,
        "id": "m1",
        "holder": "bot",
        "capabilities": [CAPABILITY],
        "max_cost_per_call_usd": "0.05",
        "min_eval_score": 0.5,
    }
    document.update(fields)
    return mandate_from_dict(document)


def _record(**canaries: dict[str, Any]) -> AgentRecord:
    return decided_record(canaries=canaries)


def _decide(mandate: Any, record: AgentRecord | None) -> Decision:
    return decide_one(
        mandate,
        agent_id="acme/triage",
        agent_version="1.0.0",
        capability=CAPABILITY,
        record=record,
        now=NOW,
    )


DRIFTED = {"drifted": True, "graded": 9, "passed": 1, "drift": {"test": 1}}


def test_a_drifted_record_denies_by_default_and_says_only_which_capability() -> None:
    decision = _decide(_mandate(), _record(**{CAPABILITY: DRIFTED}))
    assert (decision.allow, decision.reason) == (False, "drift_detected")
    # A caller may be an author: the counts and the evidence are the operator's.
    assert decision.numbers == {"drifted": [CAPABILITY], "record_eval_id": "ev_test"}


def test_drift_of_another_capability_denies_too_the_record_vouches_for_both() -> None:
    decision = _decide(_mandate(), _record(**{"other.cap": DRIFTED}))
    assert decision.reason == "drift_detected"


def test_deny_on_drift_false_lets_it_through_and_no_drift_allows() -> None:
    assert _decide(_mandate(deny_on_drift=False), _record(**{CAPABILITY: DRIFTED})).allow
    assert _decide(_mandate(), _record(**{CAPABILITY: {"drifted": False, "graded": 3}})).allow
    assert _decide(_mandate(), decided_record()).allow


def test_an_authors_view_of_a_drifted_record_still_denies() -> None:
    # What a certificate carries (an author's view) keeps the fact that decides.
    seen = author_record(_record(**{CAPABILITY: DRIFTED}))
    assert seen.canaries is not None and seen.canaries[CAPABILITY].graded is None
    assert _decide(_mandate(), seen).reason == "drift_detected"


def test_the_live_score_applies_once_enough_canaries_are_graded() -> None:
    mandate = _mandate(min_live_score=0.8, min_canaries=10)
    low = {"drifted": False, "graded": 9, "passed": 1}
    assert _decide(mandate, _record(**{CAPABILITY: low})).allow  # 9 < 10 graded
    at = {"drifted": False, "graded": 10, "passed": 8}
    assert _decide(mandate, _record(**{CAPABILITY: at})).allow  # exactly 0.8
    below = {"drifted": False, "graded": 10, "passed": 7}
    decision = _decide(mandate, _record(**{CAPABILITY: below}))
    assert decision.reason == "live_score_below_minimum"
    assert "passed" not in decision.numbers and "graded" not in decision.numbers
    # Another capability's canaries say nothing about this one.
    assert _decide(mandate, _record(**{"other.cap": below})).allow


def test_a_live_score_requirement_reads_the_record() -> None:
    mandate = mandate_from_dict(
        {
            "schema_version": 1,
            "id": "m2",
            "holder": "bot",
            "capabilities": [CAPABILITY],
            "max_cost_per_call_usd": "0.05",
            "min_live_score": 0.5,
        }
    )
    assert mandate.needs_record
    assert _decide(mandate, None).reason == "not_evaluated"


def test_the_consoles_overview_says_drifted() -> None:
    from types import SimpleNamespace

    from gateway.console._data import record_row

    # What the overview reads of an agent.
    info: Any = SimpleNamespace(
        id="acme/triage", version="1.0.0", disabled=False, manifest={"capabilities": [CAPABILITY]}
    )
    row = record_row(info, _record(**{CAPABILITY: DRIFTED}))
    assert (row["drifted"], row["stale"]) == (True, False)
    assert record_row(info, decided_record())["drifted"] is False
