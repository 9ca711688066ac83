"""Hostile JSON numbers at random positions of JSON values, written as text.

A number token is drawn from the families that amplify: huge exponents
(`1e2147483648`, `0e-99999999`), long digit strings (with or without a
point), integers past Python's 4300-digit limit, and the edges of holon's
limits (1000 digits, exponent ±4000) on both sides, plus ordinary numbers.
It is placed at a random position of a random JSON value, and the value is
written as text with the token exactly as drawn. `refused` says whether
holon must refuse a token, from the documented limits alone (not from
holon's own reader), and `placed` lists every token's JSON path in document
order, so a refusal can be checked to name the first refused one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from schema.numbers import MAX_NUMBER_DIGITS, MAX_NUMBER_EXPONENT

PathKey = tuple[str | int, ...]


@dataclass(frozen=True)
class Raw:
    """A number token, written into the text exactly as drawn."""

    token: str


def refused(token: str) -> bool:
    """Whether the documented limits refuse `token`: >1000 significant digits, |exponent| >4000."""
    mantissa, _, exponent = token.lower().partition("e")
    digits = mantissa.lstrip("-").replace(".", "")
    significant = digits.lstrip("0")
    if len(significant) > MAX_NUMBER_DIGITS:
        return True
    whole = mantissa.lstrip("-").split(".")[0]
    if significant:
        # The leading digit's power of ten, from where the point is.
        first = len(digits) - len(significant)
        leading = len(whole) - 1 - first
    else:
        leading = 0  # zero: its exponent is the written one (and the fraction's length)
        if "." in mantissa:
            leading = -len(mantissa.split(".")[1])
    adjusted = leading + (int(exponent) if exponent else 0)
    return not -MAX_NUMBER_EXPONENT <= adjusted <= MAX_NUMBER_EXPONENT


@st.composite
def number_token(draw: st.DrawFn, *, longest: int = 60_000) -> str:
    sign = draw(st.sampled_from(["", "-"]))
    kind = draw(st.sampled_from(["exponent", "digits", "integer", "zero", "edge", "ordinary"]))
    if kind == "exponent":
        mantissa = draw(st.sampled_from(["1", "9.99", "1.5", "0.001", "123456789", "7" * 999]))
        exponent = draw(
            st.sampled_from([4001, 4000, 3999, 10**6, 10_000_000, 2**31, 2**63, 10**30])
            | st.integers(-(10**7), 10**7)
        )
        marker = draw(st.sampled_from(["e", "E"]))
        plus = "+" if exponent >= 0 and draw(st.booleans()) else ""
        return f"{sign}{mantissa}{marker}{plus}{exponent}"
    if kind == "digits":
        count = draw(st.integers(990, min(longest, 6000)))
        text = "1" + "7" * (count - 1)
        point = draw(st.none() | st.integers(1, count - 1))
        if point is not None:
            text = text[:point] + "." + text[point:]
        return sign + text
    if kind == "integer":
        count = draw(st.sampled_from([4299, 4300, 4301, 10_000, longest]))
        return sign + "9" * count
    if kind == "zero":
        zeros = draw(st.sampled_from([3999, 4000, 4001, 100_000]))
        if draw(st.booleans()):
            return f"{sign}0e-{zeros}"
        return f"{sign}0.{'0' * min(zeros, longest)}"
    if kind == "edge":
        return sign + draw(
            st.sampled_from(
                [
                    "1" * MAX_NUMBER_DIGITS,
                    "1" * (MAX_NUMBER_DIGITS + 1),
                    "1." + "0" * (MAX_NUMBER_DIGITS - 1),
                    "1." + "0" * MAX_NUMBER_DIGITS,
                    f"1e{MAX_NUMBER_EXPONENT}",
                    f"9.99E+{MAX_NUMBER_EXPONENT}",
                    f"10e{MAX_NUMBER_EXPONENT}",
                    f"1e-{MAX_NUMBER_EXPONENT}",
                    f"0.1e-{MAX_NUMBER_EXPONENT - 1}",
                    f"0.1e-{MAX_NUMBER_EXPONENT}",
                    "1e20",
                    "1e21",
                ]
            )
        )
    number = draw(st.integers(-(10**20), 10**20) | st.decimals(-(10**9), 10**9, places=4))
    return str(number)


_leaves = (
    st.none()
    | st.booleans()
    | st.text(max_size=8)
    | st.integers(-1000, 1000)
    | st.decimals(-1000, 1000, places=2)
)


def json_values(token: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    """Small JSON values, some leaves hostile number tokens."""
    return st.recursive(
        _leaves | token.map(Raw),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.text("abcdemn_", max_size=5), children, max_size=4)
        ),
        max_leaves=8,
    )


@st.composite
def hostile_value(draw: st.DrawFn, *, longest: int = 60_000) -> Any:
    """A JSON value holding at least one hostile token, placed at a random position."""
    token = number_token(longest=longest)
    value = draw(json_values(token))
    containers = [(value, ())] if isinstance(value, dict | list) else []
    stack = list(containers)
    while stack:
        item, at = stack.pop()
        children = item.items() if isinstance(item, dict) else enumerate(item)
        for key, child in children:
            if isinstance(child, dict | list):
                stack.append((child, (*at, key)))
                containers.append((child, (*at, key)))
    extra = Raw(draw(token))
    if not containers:
        return [value, extra] if draw(st.booleans()) else {"n": extra, "v": value}
    target, _ = containers[draw(st.integers(0, len(containers) - 1))]
    if isinstance(target, list):
        target.insert(draw(st.integers(0, len(target))), extra)
    else:
        target["n" * (len(target) + 6)] = extra  # a key the drawn ones never are
    return value


def write(value: Any, *, pretty: bool = False) -> tuple[str, list[tuple[PathKey, str]]]:
    """JSON text of `value` with Raw tokens as drawn, and every token's path in document order."""
    placed: list[tuple[PathKey, str]] = []
    out: list[str] = []
    newline = "\n" if pretty else ""

    def emit(item: Any, at: PathKey) -> None:
        if isinstance(item, Raw):
            placed.append((at, item.token))
            out.append(item.token)
        elif isinstance(item, dict):
            out.append("{" + newline)
            for index, (key, child) in enumerate(item.items()):
                if index:
                    out.append("," + newline)
                out.append(json.dumps(key) + ": ")
                emit(child, (*at, key))
            out.append(newline + "}")
        elif isinstance(item, list):
            out.append("[" + newline)
            for index, child in enumerate(item):
                if index:
                    out.append("," + newline)
                emit(child, (*at, index))
            out.append(newline + "]")
        elif isinstance(item, Decimal):
            out.append(str(item))
        else:
            out.append(json.dumps(item))

    emit(value, ())
    return "".join(out), placed


def first_refused(placed: list[tuple[PathKey, str]]) -> PathKey | None:
    for at, token in placed:
        if refused(token):
            return at
    return None


def exponent_markers(text: str | bytes) -> int:
    if isinstance(text, bytes):
        return text.count(b"e") + text.count(b"E")
    return text.count("e") + text.count("E")
