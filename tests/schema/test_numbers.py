"""Numbers are bounded both ways: written never expanded, read only within the limits."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents._a2a import _integral_floats
from schema.jsontext import NumberError, dumps, loads
from schema.numbers import (
    MAX_NUMBER_DIGITS,
    MAX_NUMBER_EXPONENT,
    MAX_NUMBER_GROWTH,
    POSITIONAL_SLACK,
    decimal_text,
    number_problem,
    read_number,
)


@pytest.mark.parametrize(
    ("number", "text"),
    [
        ("1E+2", "100"),  # as before: plain digits where they cost little
        ("0.50", "0.50"),
        ("1234.50", "1234.50"),
        ("1E-7", "0.0000001"),
        ("1.23456789E+5", "123456.789"),
        ("1E+20", "100000000000000000000"),
        ("1E-17", "0.00000000000000001"),
        ("0E+5", "0"),
        ("-0E+5", "-0"),
        ("-0", "-0"),
        ("7" * 999 + "E+1", "7" * 999 + "0"),  # 1000 digits: readable
        ("7" * 999 + "E+2", "7.77" + "7" * 995 + "7E+1000"),  # 1001 would not be
        ("1E+21", "1E+21"),  # past the slack: the exponent form
        ("1E-20", "1E-20"),
        ("1E+400", "1E+400"),
        ("-1.5E+30", "-1.5E+30"),
        ("0E-5000", "0E-5000"),
        ("1E+2147483648", "1E+2147483648"),  # two billion zeros, never built
        ("9.99E+999999999999999999", "9.99E+999999999999999999"),
    ],
)
def test_a_decimal_is_written_without_expanding(number: str, text: str) -> None:
    assert decimal_text(Decimal(number)) == text


finite_decimals = st.decimals(allow_nan=False, allow_infinity=False) | st.builds(
    lambda digits, exponent: Decimal(digits).scaleb(exponent),
    st.integers(-(10**30), 10**30),
    st.integers(-60, 60),
)


@given(finite_decimals)
def test_written_decimals_keep_their_value_and_stay_short(number: Decimal) -> None:
    text = decimal_text(number)
    assert Decimal(text) == number
    assert len(text) <= len(str(number)) + POSITIONAL_SLACK
    if "E" not in text:  # the length worked out without building the digits was right
        assert text == format(number, "f") or text == str(number)


def _token(sign: str, whole: str, fraction: str | None, exponent: str | None) -> str:
    text = sign + whole
    if fraction is not None:
        text += "." + fraction
    if exponent is not None:
        text += exponent
    return text


digits = st.text("0123456789", min_size=1, max_size=30)
exponents = st.builds(
    lambda marker, sign, zeros, value: f"{marker}{sign}{'0' * zeros}{value}",
    st.sampled_from("eE"),
    st.sampled_from(["", "+", "-"]),
    st.integers(0, 3),
    st.integers(0, MAX_NUMBER_EXPONENT + 200),
)
number_tokens = st.builds(
    _token,
    st.sampled_from(["", "-"]),
    st.sampled_from(["0"]) | digits.filter(lambda d: d[0] != "0"),
    st.none() | digits,
    st.none() | exponents,
)


@settings(max_examples=500)
@given(number_tokens)
def test_writing_a_number_adds_at_most_the_growth_and_only_to_exponent_forms(token: str) -> None:
    """What the executor's output-size bound rests on (agents/_executor.py, _output_size)."""
    try:
        value = loads(token)
    except NumberError:
        return  # refused: nothing is written
    allowed = MAX_NUMBER_GROWTH if ("e" in token or "E" in token) else 0
    assert len(dumps(value)) <= len(token) + allowed, (token, dumps(value))
    assert loads(dumps(value)) == value  # holon reads back whatever it writes
    # A2A agents' integral doubles become ints: still within the bound.
    assert len(dumps(_integral_floats(value))) <= len(token) + allowed


def test_read_number_refuses_past_the_limits_from_the_text() -> None:
    assert read_number("1" * MAX_NUMBER_DIGITS, integral=True) == int("1" * MAX_NUMBER_DIGITS)
    too_long = read_number("1" * (MAX_NUMBER_DIGITS + 1), integral=True)
    assert isinstance(too_long, str) and "1001 significant digits" in too_long
    # Past Python's own 4300-digit limit: a message, never its ValueError.
    assert "50000 significant digits" in str(read_number("9" * 50_000, integral=True))
    assert read_number("0.00" + "1" * MAX_NUMBER_DIGITS, integral=False) == Decimal(
        "0.00" + "1" * MAX_NUMBER_DIGITS
    )
    assert isinstance(read_number("1." + "0" * MAX_NUMBER_DIGITS, integral=False), str)
    assert read_number(f"1E+{MAX_NUMBER_EXPONENT}", integral=False) == Decimal("1E+4000")
    assert read_number(f"-9.5e-{MAX_NUMBER_EXPONENT}", integral=False) == Decimal("-9.5E-4000")
    for text in ("1E+4001", "10E+4000", "1e-4001", "0e99999", "1e2147483648", "1e" + "9" * 30):
        problem = read_number(text, integral=False)
        assert isinstance(problem, str) and "out of range" in problem, text
    long_exponent = read_number("1e" + "9" * 10_000, integral=False)
    assert isinstance(long_exponent, str) and len(long_exponent) < 300  # the token is cut


def test_number_problem_judges_values() -> None:
    assert number_problem(10**999) is None
    assert number_problem(-(10**MAX_NUMBER_DIGITS)) is not None
    assert "about 5001 digits" in str(number_problem(10**5000))
    assert number_problem(Decimal("1E+4000")) is None
    assert number_problem(Decimal("1E+4001")) is not None
    assert number_problem(Decimal("1" * 1001)) is not None
    assert number_problem(Decimal("NaN")) is not None
    assert number_problem(True) is None and number_problem("1e99999") is None


def test_numbers_at_the_limits_survive_arithmetic_elsewhere() -> None:
    """A number that passed the limits converts and computes without an exception."""
    for number in (Decimal("9.99E+4000"), Decimal("1E-4000"), Decimal("9" * 1000)):
        assert number_problem(number) is None
        as_int = int(number)
        str(as_int)  # within Python's 4300-digit conversion limit
        assert decimal_text(number)
        assert float(number) in (float("inf"), 0.0) or float(number) > 0
