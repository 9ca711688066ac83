"""Exact JSON numbers in and out."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schema.jsontext import dumps, loads, max_depth


def test_decimals_keep_their_text() -> None:
    value = loads('{"total": 1234.50, "n": 3, "tiny": 1e-7}')
    assert value == {"total": Decimal("1234.50"), "n": 3, "tiny": Decimal("1e-7")}
    assert dumps(value) == '{"total":1234.50,"n":3,"tiny":0.0000001}'


def test_dumps_matches_json_without_decimals() -> None:
    value = {"b": [1, "é", None, True], "a": {"x": "\u2028"}}
    assert dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert dumps(value, sort_keys=True).startswith('{"a"')


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_non_finite_numbers_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        loads(text)


def test_non_finite_decimals_cannot_be_written() -> None:
    with pytest.raises(ValueError):
        dumps({"a": Decimal("NaN")})
    with pytest.raises(ValueError):
        dumps([float("inf")])


def test_max_depth_stops_early() -> None:
    assert max_depth(1, 10) == 0
    assert max_depth({"a": [1, {"b": []}]}, 10) == 4
    deep: list[object] = []
    for _ in range(500):
        deep = [deep]
    assert max_depth(deep, 64) == 65


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(json_values)
def test_round_trip_is_exact(value: object) -> None:
    text = dumps(value)
    assert loads(text) == value
    # Writing what was read gives the same text again: the format is stable.
    assert dumps(loads(text)) == dumps(loads(dumps(loads(text))))
