"""RFC 8785 canonical JSON: the spec's own examples."""

from __future__ import annotations

import json
import struct
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schema.canonical import canonical_json, digest, number_text


def _double(bits: str) -> float:
    value: float = struct.unpack(">d", bytes.fromhex(bits))[0]
    return value


# RFC 8785 Appendix B: IEEE 754 bit patterns and their canonical text.
@pytest.mark.parametrize(
    ("bits", "text"),
    [
        ("0000000000000000", "0"),
        ("8000000000000000", "0"),
        ("0000000000000001", "5e-324"),
        ("8000000000000001", "-5e-324"),
        ("7fefffffffffffff", "1.7976931348623157e+308"),
        ("ffefffffffffffff", "-1.7976931348623157e+308"),
        ("4340000000000000", "9007199254740992"),
        ("c340000000000000", "-9007199254740992"),
        ("4430000000000000", "295147905179352830000"),
        ("44b52d02c7e14af5", "9.999999999999997e+22"),
        ("44b52d02c7e14af6", "1e+23"),
        ("44b52d02c7e14af7", "1.0000000000000001e+23"),
        ("444b1ae4d6e2ef4e", "999999999999999700000"),
        ("444b1ae4d6e2ef4f", "999999999999999900000"),
        ("444b1ae4d6e2ef50", "1e+21"),
        ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
        ("3eb0c6f7a0b5ed8d", "0.000001"),
        ("41b3de4355555553", "333333333.3333332"),
        ("41b3de4355555554", "333333333.33333325"),
        ("41b3de4355555555", "333333333.3333333"),
        ("41b3de4355555556", "333333333.3333334"),
        ("41b3de4355555557", "333333333.33333343"),
        ("becbf647612f3696", "-0.0000033333333333333333"),
        ("43143ff3c1cb0959", "1424953923781206.2"),
    ],
)
def test_numbers_as_the_rfc_writes_them(bits: str, text: str) -> None:
    assert number_text(_double(bits)) == text


def test_the_rfc_example_object() -> None:
    value = {
        "numbers": [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001],
        "string": "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/",
        "literals": [None, True, False],
    }
    assert canonical_json(value) == (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
    )


def test_keys_sort_by_utf16_code_units() -> None:
    # U+10000 sorts before U+FB33 in UTF-16 (a surrogate 0xD800 < 0xFB33).
    assert canonical_json({"\ufb33": 1, "\U00010000": 2}) == '{"\U00010000":2,"\ufb33":1}'


def test_decimals_hash_by_value_not_spelling() -> None:
    assert digest({"a": Decimal("1.50")}) == digest({"a": Decimal("1.5")}) == digest({"a": 1.5})
    assert digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})


def test_rejects_what_json_cannot_hold() -> None:
    with pytest.raises(ValueError):
        canonical_json(float("nan"))
    with pytest.raises(ValueError):
        canonical_json("\ud800")
    with pytest.raises(TypeError):
        canonical_json({1: "a"})


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_number_text_round_trips(value: float) -> None:
    assert float(number_text(value)) == value


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=15,
    )
)
def test_canonical_text_is_json_of_the_same_value(value: object) -> None:
    assert json.loads(canonical_json(value)) == value


@given(st.integers(min_value=-(2**53) - 10, max_value=2**53 + 10))
def test_integers_write_as_the_double_they_denote(value: int) -> None:
    # The writer's shortcut for exact integers agrees with the double's text.
    assert canonical_json([value]) == f"[{number_text(value)}]"


@given(st.dictionaries(st.text(max_size=4), st.integers(0, 3), max_size=6))
def test_any_keys_sort_by_utf16_code_units(value: dict[str, int]) -> None:
    keys = list(json.loads(canonical_json(value)))
    assert keys == sorted(value, key=lambda k: k.encode("utf-16-be", "surrogatepass"))
