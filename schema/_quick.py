"""A fast "certainly valid" for the common JSON Schema shapes (`quick_validity`).

Every live call's input and output, and every case of a suite as it loads,
is checked against a schema. For the shapes most input and output schemas
have (types, properties, required, additionalProperties, enums of strings,
items, lengths, bounds), this answers in a few microseconds what the
jsonschema machinery answers in tens. True means valid; False means "not
known valid": the full validator then decides, and says why.

Each schema node compiles to one function. The keywords about an object
(`properties`, `required`, `additionalProperties`) become one loop over the
object, and the node's tests run in a plain loop: a tree of `all(...)` over
generators cost a generator frame per node and per member, which was most of
a case's check when a suite loads (bench/eval, the plan phase).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from decimal import Decimal
from typing import Any

__all__ = ["Quick", "is_integer", "quick_validity"]

Quick = Callable[[Any], bool]

# Keywords `quick_validity` understands; a schema using any other keyword gets
# no fast path (annotations are fine: they never make a document invalid).
_ANNOTATIONS = frozenset({"title", "description", "$comment", "default", "examples"})
_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_OBJECT_KEYWORDS = frozenset({"properties", "required", "additionalProperties"})


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _is_number(instance: object) -> bool:
    return not isinstance(instance, bool) and isinstance(instance, numbers.Number)


def is_integer(instance: object) -> bool:
    """JSON Schema's integer: 1.0 is one, and so is an integral Decimal (holon parses
    non-integral numbers as Decimal); the full validator's type checker uses this too."""
    if isinstance(instance, bool):
        return False
    if isinstance(instance, int):
        return True
    if isinstance(instance, float):
        return instance.is_integer()
    if isinstance(instance, Decimal):
        return instance.is_finite() and instance == instance.to_integral_value()
    return False


_TYPES: dict[str, Quick] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": is_integer,
    "number": _is_number,
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def quick_validity(schema: Any, pattern: Callable[[str], Any]) -> Quick | None:
    """A function that says True only of documents `schema` certainly accepts, or None.

    `pattern` compiles a `pattern` keyword on the full validator's own engine
    (schema._registry: RE2), so both agree; `uniqueItems` is known only for
    arrays of strings. It mirrors jsonschema with holon's type checker
    (Decimal is a number, an integral one an integer); a schema with anything
    else (`$ref`, `format`, combinators, another draft) gets None.
    """
    try:
        test = _node(schema, pattern, top=True)
    except _Unsupported:
        return None

    def quick(value: Any) -> bool:
        try:
            return test(value)
        except Exception:  # an odd value (a NaN Decimal): the validator judges it
            return False

    return quick


class _Unsupported(Exception):
    pass


def _node(schema: Any, pattern: Callable[[str], Any], *, top: bool = False) -> Quick:
    if isinstance(schema, bool):
        return _always if schema else _never
    if not isinstance(schema, dict):
        raise _Unsupported
    tests: list[Quick] = []
    for key, value in schema.items():
        if key in _ANNOTATIONS or key in _OBJECT_KEYWORDS:
            continue
        if key == "$schema" and top and value == _DRAFT_2020_12:
            continue
        # An id names the document, and definitions alone validate nothing (a
        # `$ref` into them has no fast path, so they are never used here).
        if key in ("$id", "$defs") and top:
            continue
        tests.append(_keyword(key, value, schema, pattern))
    if _OBJECT_KEYWORDS & schema.keys():
        tests.append(_object(schema, pattern))
    tests = [t for t in tests if t is not _always]
    if not tests:
        return _always
    if _never in tests:
        return _never
    if len(tests) == 1:
        return tests[0]
    checks = tuple(tests)

    def every(value: Any) -> bool:
        for test in checks:
            if not test(value):
                return False
        return True

    return every


def _object(schema: dict[str, Any], pattern: Callable[[str], Any]) -> Quick:
    """`properties`, `required` and `additionalProperties` of one node, in one pass."""
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise _Unsupported
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        raise _Unsupported
    # A property whose schema accepts anything (only a description) needs no test.
    subs = {name: _node(sub, pattern) for name, sub in properties.items()}
    checked = tuple((name, sub) for name, sub in subs.items() if sub is not _always)
    names = tuple(required)
    extra: Quick | None = None  # None: any other member is fine
    if "additionalProperties" in schema:
        if "patternProperties" in schema:
            raise _Unsupported
        extra = _node(schema["additionalProperties"], pattern)
        if extra is _always:
            extra = None
    known = frozenset(properties)

    def test(value: Any) -> bool:
        if not isinstance(value, dict):
            return True
        for name in names:
            if name not in value:
                return False
        for name, sub in checked:
            if name in value and not sub(value[name]):
                return False
        if extra is not None:
            for name, member in value.items():
                if name not in known and not extra(member):
                    return False
        return True

    return test


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Unsupported
    return value


def _keyword(key: str, value: Any, schema: dict[str, Any], pattern: Callable[[str], Any]) -> Quick:
    if key == "type":
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list) or not names or not all(n in _TYPES for n in names):
            raise _Unsupported
        kinds = tuple(_TYPES[n] for n in names)
        return kinds[0] if len(kinds) == 1 else (lambda v: any(kind(v) for kind in kinds))
    if key in ("enum", "const"):
        members = value if key == "enum" else [value]
        if not isinstance(members, list):
            raise _Unsupported
        # jsonschema's `equal` compares a string to anything with ==, so a
        # string is valid iff it is one of the string members.
        strings = frozenset(m for m in members if isinstance(m, str))
        return lambda v: isinstance(v, str) and v in strings
    if key == "items":
        if "prefixItems" in schema:
            raise _Unsupported
        sub = _node(value, pattern)
        if sub is _always:
            return _always

        def items(v: Any) -> bool:
            if isinstance(v, list):
                for item in v:
                    if not sub(item):
                        return False
            return True

        return items
    if key in ("minItems", "maxItems"):
        bound = _count(value)
        if key == "minItems":
            return lambda v: not isinstance(v, list) or len(v) >= bound
        return lambda v: not isinstance(v, list) or len(v) <= bound
    if key in ("minLength", "maxLength"):
        bound = _count(value)
        if key == "minLength":
            return lambda v: not isinstance(v, str) or len(v) >= bound
        return lambda v: not isinstance(v, str) or len(v) <= bound
    if key in ("minimum", "maximum"):
        if not _is_number(value):
            raise _Unsupported
        if key == "minimum":
            return lambda v: not _is_number(v) or not v < value
        return lambda v: not _is_number(v) or not v > value
    if key == "pattern":
        if not isinstance(value, str):
            raise _Unsupported
        search = pattern(value).search  # the same engine as the validator's
        return lambda v: not isinstance(v, str) or search(v) is not None
    if key == "uniqueItems":
        if value is False:
            return _always
        if value is not True:
            raise _Unsupported
        # Known only for strings (jsonschema's equality of 1 and True, 1 and 1.0, is its own).
        return lambda v: (
            not isinstance(v, list)
            or (all(isinstance(item, str) for item in v) and len(set(v)) == len(v))
        )
    raise _Unsupported
