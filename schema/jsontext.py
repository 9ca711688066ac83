"""JSON text in and out, with exact numbers.

Inside holon a JSON number is an `int` or a `Decimal` of its text, never a
float, so `1234.50` compares as written and money never drifts. `dumps`
writes Decimals back as JSON numbers (never strings), `loads` reads them so.
Floats from foreign code are accepted on the way out and written with
`repr`, which round-trips.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any, NoReturn

__all__ = ["JSONValue", "decimal_text", "dumps", "loads", "max_depth"]

JSONValue = Any  # dict[str, JSONValue] | list[JSONValue] | str | int | Decimal | bool | None

_encode_str = json.encoder.encode_basestring
_encode_str_ascii = json.encoder.encode_basestring_ascii


def decimal_text(number: Decimal) -> str:
    """A JSON number for a finite Decimal: `Decimal("1E+2")` -> `100`, `0.50` stays `0.50`."""
    if not number.is_finite():
        raise ValueError(f"{number} is not a finite JSON number")
    text = str(number)
    if "E" in text or "e" in text:
        # JSON allows exponents, but plain digits read better and compare the same.
        text = format(number, "f")
    return text


def dumps(value: JSONValue, *, sort_keys: bool = False, ensure_ascii: bool = False) -> str:
    """Compact JSON text (no spaces), Decimal-exact. Raises ValueError on NaN/Infinity."""
    # The C encoder first: it stops at the first Decimal (which it cannot
    # write exactly), so a value without one costs no walk of its own, and
    # one with a Decimal costs the C encoder's partial pass plus the writer.
    try:
        return _ENCODERS[sort_keys, ensure_ascii].encode(value)
    except _NotPlain:
        pass
    out: list[str] = []
    _write(value, out, sort_keys, _encode_str_ascii if ensure_ascii else _encode_str)
    return "".join(out)


class _NotPlain(Exception):
    """A Decimal (or a foreign type) met by the C encoder: the exact writer takes over."""


def _not_plain(value: Any) -> NoReturn:
    raise _NotPlain


# Built once (json.dumps with options builds an encoder per call).
_ENCODERS = {
    (sort_keys, ensure_ascii): json.JSONEncoder(
        separators=(",", ":"),
        sort_keys=sort_keys,
        ensure_ascii=ensure_ascii,
        allow_nan=False,
        default=_not_plain,
    )
    for sort_keys in (False, True)
    for ensure_ascii in (False, True)
}


def _write(value: Any, out: list[str], sort_keys: bool, enc: Any) -> None:
    if isinstance(value, str):
        out.append(enc(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, Decimal):
        out.append(decimal_text(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a finite JSON number")
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        out.append("{")
        items = sorted(value.items()) if sort_keys else value.items()
        first = True
        for key, item in items:
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {type(key).__name__}")
            if not first:
                out.append(",")
            first = False
            out.append(enc(key))
            out.append(":")
            _write(item, out, sort_keys, enc)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, sort_keys, enc)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# One decoder for every call: json.loads with options builds a new one each time.
_DECODER = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)


def loads(text: str | bytes) -> JSONValue:
    """Parse JSON; non-integral numbers become Decimal; NaN/Infinity are refused.

    Raises ValueError (json.JSONDecodeError is one) on bad text, and
    RecursionError on absurd nesting (callers bound depth with `max_depth`).
    """
    if isinstance(text, bytes | bytearray):
        # As json.loads does: UTF-8, -16 or -32, detected from the first bytes.
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    return _DECODER.decode(text)


def max_depth(value: JSONValue, limit: int) -> int:
    """Nesting depth of a parsed value (a scalar is 0), counting no further than `limit + 1`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children if isinstance(child, dict | list))
    return deepest
