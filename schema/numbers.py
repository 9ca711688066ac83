"""How big a JSON number may be, and how holon writes one.

Inside holon a number is an `int` or a `Decimal` of its text (see
`schema.jsontext`), so its cost is whatever its text says, and the text can
lie about its size: `1E+2147483648` is 13 characters, and written out
positionally two billion digits. Two rules keep every number's cost in
proportion to the text it came from:

- **Writing never expands.** `decimal_text` writes a Decimal positionally
  (`1E+2` as `100`, `1E-7` as `0.0000001`) only when that text is at most
  `POSITIONAL_SLACK` (16) characters longer than its exponent form, and
  otherwise in exponent form (`1E+400`, `1.5E-30`). Numbers up to 1E+20
  and down to 1E-17 read as plain digits; the written length of any number
  is its significant digits plus its exponent's digits plus a constant,
  and holon reads back whatever it writes (plain digits never take an
  integer past 1000 digits). Writing a number holon read adds at most
  `MAX_NUMBER_GROWTH` characters to its text, and only to a number written
  with an exponent.
- **Reading refuses numbers beyond the limits**, where untrusted JSON enters
  (agent bodies, request bodies, documents): more than `MAX_NUMBER_DIGITS`
  (1000) significant digits, or an exponent beyond ±`MAX_NUMBER_EXPONENT`
  (4000) in scientific notation (d.ddd…E±n, `Decimal.adjusted()`), zero
  included. 1000 digits is far beyond any measurement or amount of money;
  with exponents within ±4000, `int()` of any integral number holon accepts
  has at most 4001 digits, inside Python's 4300-digit limit on converting
  integers to text, so no later conversion raises, and Decimal arithmetic
  on such numbers stays far inside every context's exponent range.

The checks look at a token's text before building its value, so refusing a
two-billion-digit number costs as little as reading its 13 characters.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any, Final

__all__ = [
    "MAX_NUMBER_DIGITS",
    "MAX_NUMBER_EXPONENT",
    "MAX_NUMBER_GROWTH",
    "POSITIONAL_SLACK",
    "decimal_text",
    "number_problem",
    "read_number",
]

MAX_NUMBER_DIGITS: Final = 1000
"""Most significant digits a number may have (`1.50` has 3; leading zeros do not count)."""

MAX_NUMBER_EXPONENT: Final = 4000
"""Largest exponent, either way, of a number in scientific notation (`Decimal.adjusted()`)."""

POSITIONAL_SLACK: Final = 16
"""How many characters longer than its exponent form a Decimal's plain digits may be."""

MAX_NUMBER_GROWTH: Final = 32
"""Most characters writing a number adds to the token it was read from (tests prove it)."""

_INTEGER_LIMIT: Final = 10**MAX_NUMBER_DIGITS
_SHOWN: Final = 40  # characters of an offending token quoted in a message
_RULE: Final = (
    f"a number has at most {MAX_NUMBER_DIGITS} significant digits and an exponent from "
    f"-{MAX_NUMBER_EXPONENT} to +{MAX_NUMBER_EXPONENT} in scientific notation"
)


def decimal_text(number: Decimal) -> str:
    """The JSON text of a finite Decimal, never much longer than its exponent form.

    `Decimal("1E+2")` -> `100`, `0.50` stays `0.50`, `1E-7` -> `0.0000001`,
    `1E+400` stays `1E+400` (400 zeros would be plain digits).
    """
    if not number.is_finite():
        raise ValueError(f"{number} is not a finite JSON number")
    text = str(number)
    if "E" not in text:
        return text
    # Plain digits read better and compare the same, but only while they cost
    # a few characters: their length is worked out without building them.
    sign, digits, exponent = number.as_tuple()
    assert isinstance(exponent, int)  # finite
    count = len(digits)
    if exponent >= 0:
        if digits == (0,):
            return "0" if sign == 0 else "-0"  # as format() writes 0E+5
        plain = count + exponent
        if plain > MAX_NUMBER_DIGITS:
            # Its zeros would be significant digits of the integer written: past the
            # limit, holon could not read back what it wrote.
            return text
    elif count > -exponent:
        plain = count + 1  # digits with a point inside
    else:
        plain = 2 - exponent  # "0." and zeros before the digits
    if sign + plain <= len(text) + POSITIONAL_SLACK:
        return format(number, "f")
    return text


def number_problem(value: Any) -> str | None:
    """Why an int or a Decimal is beyond the limits, or None (for anything else too)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        if -_INTEGER_LIMIT < value < _INTEGER_LIMIT:
            return None
        # Counting its digits exactly would convert it to text, which Python
        # refuses past 4300 digits: the bit length tells the order of magnitude.
        return (
            f"more digits than a number may have (an integer of about "
            f"{int(value.bit_length() * 0.30103) + 1} digits); {_RULE}"
        )
    if isinstance(value, Decimal):
        return _decimal_problem(value, None)
    return None


def read_number(text: str, integral: bool) -> int | Decimal | str:
    """The value of a JSON number token, or (a `str`) why it is refused.

    `integral`: the token has no fraction and no exponent (the JSON
    scanner's `parse_int`). The digits are counted on the text, before any
    value is built, and exponents too long to mean anything are refused
    without asking `Decimal` (which raises past its own range).
    """
    mantissa, marker, exponent = text.replace("E", "e").partition("e")
    significant = mantissa.lstrip("+-").replace(".", "").lstrip("0")
    if len(significant) > MAX_NUMBER_DIGITS:
        return (
            f"more digits than a number may have ({_shown(text)} has {len(significant)} "
            f"significant digits); {_RULE}"
        )
    if integral:
        return int(text)
    if marker and len(exponent.lstrip("+-").lstrip("0")) > len(str(MAX_NUMBER_EXPONENT)) + 1:
        return f"the number {_shown(text)} is out of range; {_RULE}"
    try:
        number = Decimal(text)
    except InvalidOperation:
        return f"the number {_shown(text)} is not a decimal number"
    problem = _decimal_problem(number, text)
    return number if problem is None else problem


def _decimal_problem(number: Decimal, text: str | None) -> str | None:
    if not number.is_finite():
        return f"{number} is not a finite number (JSON has no NaN or Infinity)"
    shown = _shown(text if text is not None else str(number))
    adjusted = number.adjusted()
    if not -MAX_NUMBER_EXPONENT <= adjusted <= MAX_NUMBER_EXPONENT:
        return f"the number {shown} is out of range; {_RULE}"
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # finite
    digits = adjusted - exponent + 1
    if digits > MAX_NUMBER_DIGITS:
        return (
            f"more digits than a number may have ({shown} has {digits} significant digits); {_RULE}"
        )
    return None


def _shown(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"
