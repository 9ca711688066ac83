"""JSON values as the check DSL sees them: kinds, exact numbers, deep equality.

Numbers in holon are `int` or `Decimal` (see `schema.jsontext`); a `float`
from foreign code is read as the Decimal of its shortest repr, so `0.1` is
0.1. `true` is never the number 1, and object key order never matters.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final


class _Missing:
    """Nothing at a path (distinct from JSON null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()

_NUMBER_TYPES: Final = (int, Decimal, float)


def is_number(value: Any) -> bool:
    """A JSON number: int, Decimal or finite float, never a bool."""
    kind = type(value)
    if kind is int or kind is Decimal:
        return True
    return kind is float and math.isfinite(value)


def to_decimal(value: Any) -> Decimal:
    """The exact Decimal of a JSON number (callers check `is_number` first)."""
    kind = type(value)
    if kind is Decimal:
        return value  # type: ignore[no-any-return]
    if kind is float:
        return Decimal(repr(value))
    return Decimal(value)


def is_integer(value: Any) -> bool:
    """JSON Schema's integer: any number with a zero fractional part (`1.0` is one)."""
    kind = type(value)
    if kind is int:
        return True
    if kind is Decimal:
        return bool(value == value.to_integral_value())
    return kind is float and math.isfinite(value) and value.is_integer()


def kind_of(value: Any) -> str:
    """The JSON kind of a value, for messages: null boolean number string array object."""
    if value is None:
        return "null"
    kind = type(value)
    if kind is bool:
        return "boolean"
    if kind is str:
        return "string"
    if kind is list or kind is tuple:
        return "array"
    if kind is dict or isinstance(value, dict):
        return "object"
    if is_number(value):
        return "number"
    return type(value).__name__


def json_equal(a: Any, b: Any) -> bool:
    """Deep JSON equality: `1 == 1.0`, `true != 1`, object key order ignored."""
    ta = type(a)
    tb = type(b)
    if ta is tb:
        if ta is list:
            return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
        if ta is dict:
            if len(a) != len(b):
                return False
            for key, item in a.items():
                if key not in b or not json_equal(item, b[key]):
                    return False
            return True
        return bool(a == b)
    if ta in _NUMBER_TYPES and tb in _NUMBER_TYPES:
        if ta is float or tb is float:
            if not (is_number(a) and is_number(b)):
                return False
            return to_decimal(a) == to_decimal(b)
        return bool(a == b)
    if isinstance(a, dict) and isinstance(b, dict):
        return json_equal(dict(a), dict(b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return json_equal(list(a), list(b))
    return False


def freeze(value: Any) -> Any:
    """A hashable key with the equality of `json_equal` (for sets, multisets and lookups)."""
    kind = type(value)
    if kind is str:
        return value
    if kind is bool or value is None:
        return (kind, value)
    if kind is int or kind is Decimal:
        return (int, value)  # int and Decimal hash alike when equal
    if kind is float:
        return (int, to_decimal(value)) if math.isfinite(value) else (float, repr(value))
    if kind is list or kind is tuple:
        return (list, tuple(freeze(item) for item in value))
    if isinstance(value, dict):
        return (dict, frozenset((key, freeze(item)) for key, item in value.items()))
    return (object, repr(value))


def map_strings(value: Any, transform: Callable[[str], str]) -> Any:
    """`value` with `transform` applied to every string inside it (keys untouched)."""
    kind = type(value)
    if kind is str:
        return transform(value)
    if kind is list:
        return [map_strings(item, transform) for item in value]
    if kind is dict:
        return {key: map_strings(item, transform) for key, item in value.items()}
    return value


def size_of(value: Any) -> int | None:
    """Length of a string, array or object; None for anything else."""
    kind = type(value)
    if kind is str or kind is list or kind is dict:
        return len(value)
    return None
