"""`accept_issuers`: whose records a mandate reads (a pure function; docs/gateway.md)."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from gateway.mandates import decide_one, mandate_from_dict
from records import AgentRecord
from schema.errors import MandateError
from tests.records._record import agent_record

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
A = "urn:holon:issuer:a"


def _mandate(**fields: Any) -> Any:
    return mandate_from_dict(
        {
            "schema_version": 1,
            "id": "m1",
            "holder": "bot",
            "capabilities": ["ticket.classify"],
            "max_cost_per_call_usd": "0.05",
            "min_eval_score": 0.8,
            **fields,
        }
    )


def _record(score: str = "0.9", **fields: Any) -> AgentRecord:
    return agent_record(
        eval_score=Decimal(score),
        weakest_suite="tiny",
        unverified_capabilities=[],
        evaluated_at="2026-11-30T12:00:00Z",
        stale=False,
        warnings=[],
        suites={"tiny": {"capability": "ticket.classify", "score": Decimal(score)}},
        **fields,
    )


def _decide(mandate: Any, record: Any, imported: list[AgentRecord]) -> Any:
    return decide_one(
        mandate,
        agent_id="acme/triage",
        agent_version="1.0.0",
        capability="ticket.classify",
        record=record,
        now=NOW,
        imported=imported,
    )


def test_by_default_only_this_stores_records_count() -> None:
    imported = [_record(issuer=A, certificate_id="crt_A")]
    verdict = _decide(_mandate(), None, imported)
    assert (verdict.allow, verdict.reason) == (False, "issuer_not_accepted")
    assert verdict.numbers["issuers"] == [A] and verdict.numbers["accept_issuers"] == ["self"]
    local = _decide(_mandate(), _record(certificate_id="crt_local"), imported)
    assert local.allow and local.certificate_id == "crt_local"


def test_an_accepted_issuers_record_admits_and_names_its_certificate() -> None:
    verdict = _decide(
        _mandate(accept_issuers=[A]), None, [_record(issuer=A, certificate_id="crt_A")]
    )
    assert verdict.allow and verdict.certificate_id == "crt_A"
    # Its requirements apply to the imported record as to a local one.
    low = _decide(_mandate(accept_issuers=[A]), None, [_record("0.5", issuer=A)])
    assert low.reason == "eval_score_below_minimum"


def test_a_mandate_accepting_only_others_ignores_this_stores_record() -> None:
    verdict = _decide(_mandate(accept_issuers=[A]), _record(), [])
    assert verdict.reason == "issuer_not_accepted" and verdict.numbers["issuers"] == ["self"]


def test_this_stores_record_comes_first_when_both_are_accepted() -> None:
    mandate = _mandate(accept_issuers=["self", A])
    verdict = _decide(mandate, _record(certificate_id="crt_local"), [_record(issuer=A)])
    assert verdict.certificate_id == "crt_local"


def test_no_record_at_all_is_not_evaluated() -> None:
    assert _decide(_mandate(accept_issuers=[A]), None, []).reason == "not_evaluated"


def test_a_mandate_without_requirements_reads_no_record() -> None:
    mandate = mandate_from_dict(
        {
            "schema_version": 1,
            "id": "m1",
            "holder": "bot",
            "capabilities": ["ticket.classify"],
            "max_cost_per_call_usd": "0.05",
        }
    )
    verdict = _decide(mandate, None, [_record(issuer=A)])
    assert verdict.allow and verdict.certificate_id is None


@pytest.mark.parametrize("value", [[], "self", [""], ["self", "self"], [1]])
def test_bad_accept_issuers_name_the_path(value: Any) -> None:
    with pytest.raises(MandateError) as caught:
        _mandate(accept_issuers=value)
    assert "accept_issuers" in str(caught.value)


def test_an_imported_record_whose_revocation_is_unchecked_is_passed_over_by_default() -> None:
    """Imported without its issuer's revocation list, a record may be revoked already: a
    mandate reads it only when it says `accept_unchecked_revocation: true`."""
    unchecked = _record(issuer=A, certificate_id="crt_A", revocation="unchecked")
    assert unchecked.revocation_unchecked
    verdict = _decide(_mandate(accept_issuers=[A]), None, [unchecked])
    assert (verdict.allow, verdict.reason) == (False, "issuer_not_accepted")
    assert verdict.numbers["unchecked_revocation"] == [A]
    lenient = _decide(
        _mandate(accept_issuers=[A], accept_unchecked_revocation=True), None, [unchecked]
    )
    assert lenient.allow and lenient.certificate_id == "crt_A"
    # A checked record of another accepted issuer is read instead of the unchecked one.
    b = "urn:holon:issuer:b"
    checked = _record(issuer=b, certificate_id="crt_B")
    either = _decide(_mandate(accept_issuers=[A, b]), None, [unchecked, checked])
    assert either.allow and either.certificate_id == "crt_B"
    # Nothing about revocation is said when no record was passed over for it.
    plain = _decide(_mandate(accept_issuers=[A]), None, [_record(issuer="urn:holon:issuer:c")])
    assert "unchecked_revocation" not in plain.numbers
