"""Outcome: printable bounded details, and an exact JSON round trip for records."""

from __future__ import annotations

from decimal import Decimal
from typing import get_args

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import Attempt, Outcome, OutcomeCode, Usage
from agents._outcome import DETAIL_LIMIT, printable
from schema.jsontext import dumps, loads


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("plain", "plain"),
        ("a\nb\r\tc", "a\\nb\\r\\tc"),
        ("\x1b[31mred", "\\x1b[31mred"),
        ("bidi\u202eevil", "bidi\\u202eevil"),
        ("zero\u200bwidth", "zero\\u200bwidth"),
        ("back\\slash", "back\\\\slash"),
        ("héllo ✓", "héllo ✓"),
    ],
)
def test_printable_escapes(text: str, expected: str) -> None:
    assert printable(text) == expected


@given(st.text(max_size=2000))
def test_printable_is_bounded_and_printable(text: str) -> None:
    out = printable(text)
    assert len(out) <= DETAIL_LIMIT
    assert out.isprintable()


def test_printable_truncates_without_cutting_an_escape() -> None:
    out = printable("\x00" * 500)
    assert len(out) <= DETAIL_LIMIT and out.endswith("…")
    assert out[:-1].replace("\\x00", "") == ""
    assert printable("x" * 10_000_000).startswith("x" * 299)


money = st.decimals(min_value=0, max_value=10**6, places=6, allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | money,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
codes: st.SearchStrategy[OutcomeCode] = st.sampled_from(get_args(OutcomeCode))


@st.composite
def outcomes(draw: st.DrawFn) -> Outcome:
    code = draw(codes)
    attempts = tuple(
        Attempt(
            number=i + 1,
            code=draw(codes),
            latency_ms=draw(st.floats(min_value=0, max_value=1e6, allow_nan=False)),
            http_status=draw(st.none() | st.integers(100, 599)),
            error=draw(st.none() | st.text(max_size=30)),
        )
        for i in range(draw(st.integers(0, 3)))
    )
    usage = draw(
        st.none()
        | st.builds(
            Usage,
            input_tokens=st.none() | st.integers(0, 2**63 - 1),
            output_tokens=st.none() | st.integers(0, 2**63 - 1),
            cost_usd=st.none() | money,
        )
    )
    return Outcome(
        code=code,
        request_id=draw(st.uuids()).hex,
        output=draw(json_values) if code == "ok" else None,
        usage=usage,
        cost_usd=draw(money),
        cost_source=draw(st.sampled_from(["priced", "reported", "none"])),
        latency_ms=draw(st.floats(min_value=0, max_value=1e7, allow_nan=False)),
        http_status=draw(st.none() | st.integers(100, 599)),
        attempts=attempts,
        error=draw(st.none() | st.text(max_size=50)),
    )


@settings(max_examples=150)
@given(outcomes())
def test_outcome_json_round_trip_is_exact(outcome: Outcome) -> None:
    text = dumps(outcome.to_json())
    again = Outcome.from_json(loads(text))
    assert again == outcome
    assert dumps(again.to_json()) == text


def test_money_is_stored_as_decimal_text() -> None:
    outcome = Outcome(
        code="ok",
        request_id="r",
        output={"total": Decimal("1234.50")},
        usage=Usage(cost_usd=Decimal("0.0031")),
        cost_usd=Decimal("0.00272"),
        cost_source="priced",
    )
    data = outcome.to_json()
    assert data["cost_usd"] == "0.00272" and data["usage"] == {"cost_usd": "0.0031"}
    assert '"total":1234.50' in dumps(data)


def test_output_is_only_kept_for_ok() -> None:
    failed = Outcome(code="timeout", request_id="r", output="ignored")
    assert "output" not in failed.to_json()
    assert Outcome.from_json({**failed.to_json(), "output": "smuggled"}).output is None


@pytest.mark.parametrize(
    "patch",
    [
        {"code": "exploded"},
        {"cost_source": "guessed"},
        {"cost_usd": "NaN"},
        {"cost_usd": 0.5},
        {"attempts": {"number": 1}},
        {"latency_ms": "fast"},
        {"http_status": True},
    ],
)
def test_from_json_rejects_what_to_json_cannot_make(patch: dict[str, object]) -> None:
    base = Outcome(code="ok", request_id="r", output=1).to_json()
    with pytest.raises((ValueError, KeyError)):
        Outcome.from_json({**base, **patch})
