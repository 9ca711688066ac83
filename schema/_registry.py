"""Find, load and cache the shipped JSON Schema documents."""

from __future__ import annotations

import json
import numbers
from collections.abc import Callable
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import re2
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource

SCHEMA_DIR = Path(__file__).resolve().parent


def schema_path(name: str) -> Path:
    """`agent` -> schema/agent.schema.json; `capabilities/x.input` -> capabilities/x.input.json."""
    if "/" in name:
        return SCHEMA_DIR / f"{name}.json"
    return SCHEMA_DIR / f"{name}.schema.json"


@cache
def load_schema(name: str) -> dict[str, Any]:
    with schema_path(name).open("rb") as fh:
        loaded: dict[str, Any] = json.load(fh)
    return loaded


# The entities the API returns, one schema each (schema/entities/NAME.json): the JSON of
# one typed record's `to_json` in `records` (tests/records/test_entities.py checks real
# ones). An operation's response schema references these rather than restating them.
ENTITY_DIR = SCHEMA_DIR / "entities"


@cache  # the operation table asks at import time, once per entity it references
def entity_names() -> tuple[str, ...]:
    """Every entity with a schema: `agent`, `ledger-row`, `token`, ..."""
    return tuple(sorted(path.stem for path in ENTITY_DIR.glob("*.json")))


def entity_schema(name: str) -> dict[str, Any]:
    """The schema of one entity (`ledger-row`: schema/entities/ledger-row.json), cached:
    copy it before changing it."""
    if name not in entity_names():
        raise KeyError(f"no entity schema {name!r}: one of {', '.join(entity_names())}")
    return load_schema(f"entities/{name}")


def _is_integer(checker: Any, instance: object) -> bool:
    # JSON Schema: 1.0 is an integer. Documents carry non-integral numbers as
    # Decimal, which jsonschema's own checker does not know about.
    if isinstance(instance, bool):
        return False
    if isinstance(instance, int):
        return True
    if isinstance(instance, float):
        return instance.is_integer()
    if isinstance(instance, Decimal):
        return instance.is_finite() and instance == instance.to_integral_value()
    return False


@cache
def _compile_pattern(pattern: str) -> Any:
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error:
        # A trusted schema may use what RE2 lacks (lookaround). Python's
        # engine then; `\Z` keeps `$` from matching before a final newline.
        import re  # noqa: TID251 - schemas are trusted operator data

        return re.compile(pattern.replace("$", r"\Z") if pattern.endswith("$") else pattern)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """JSON Schema `pattern` with ECMA-262's `$` (end of text), in linear time.

    jsonschema's own uses Python's `re`, where `$` also matches before a
    trailing newline ("acme/x\n" would pass an id pattern) and hostile
    input can backtrack for seconds; RE2 has neither problem.
    """
    if isinstance(instance, str) and not _compile_pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def validator_class(base: Any = jsonschema.Draft202012Validator) -> Any:
    """`base` (a jsonschema draft class) with holon's numbers and RE2 patterns.

    Decimal is a number and an integral Decimal an integer, as JSON Schema
    means them; `pattern` runs on RE2 (see `_pattern`).
    """
    checker = base.TYPE_CHECKER.redefine("integer", _is_integer)
    return jsonschema.validators.extend(
        base, validators={"pattern": _pattern}, type_checker=checker
    )


_Validator = validator_class()


@cache
def shipped_registry() -> Registry[Any]:
    """Every shipped schema by its `$id`, so they can `$ref` one another."""
    resources = []
    for path in sorted(SCHEMA_DIR.rglob("*.json")):
        with path.open("rb") as fh:
            document = json.load(fh)
        if isinstance(document, dict) and "$id" in document:
            resources.append((document["$id"], Resource.from_contents(document)))
    registry: Registry[Any] = Registry().with_resources(resources)
    return registry


def make_validator(document: dict[str, Any], registry: Registry[Any] | None = None) -> Validator:
    """A Draft 2020-12 validator that treats Decimal numbers as JSON numbers.

    `registry` resolves `$ref`s to other documents; by default the shipped
    schemas (a suite passes its own directory's schemas instead).
    """
    validator_: Validator = _Validator(
        document,
        registry=registry if registry is not None else shipped_registry(),
        format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
    )
    return validator_


@cache
def validator(name: str) -> Validator:
    return make_validator(load_schema(name))


# -- a fast "valid" for the common schema shapes --------------------------------

Quick = Callable[[Any], bool]

# Keywords `quick_validity` understands; a schema using any other keyword gets
# no fast path (annotations are fine: they never make a document invalid).
_ANNOTATIONS = frozenset({"title", "description", "$comment", "default", "examples"})
_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"


def _is_number(instance: object) -> bool:
    return not isinstance(instance, bool) and isinstance(instance, numbers.Number)


_TYPES: dict[str, Quick] = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: _is_integer(None, v),
    "number": _is_number,
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def quick_validity(schema: Any) -> Quick | None:
    """A function that says True only of documents `schema` certainly accepts, or None.

    For the shapes most output and input schemas have (types, properties,
    required, additionalProperties, enums of strings, items, lengths, bounds),
    it answers in a few microseconds what the jsonschema machinery answers in
    tens. `pattern` runs on the validator's own engine (RE2); `uniqueItems`
    is known only for arrays of strings. False means "not known valid": ask
    the full validator, which also says why. It mirrors jsonschema with
    `validator_class`'s type checker (Decimal is a number, an integral one an
    integer); a schema with anything
    else (`$ref`, `format`, combinators, another draft) gets None.
    """
    try:
        test = _quick(schema, top=True)
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


def _quick(schema: Any, *, top: bool = False) -> Quick:
    if isinstance(schema, bool):
        answer = schema
        return lambda v: answer
    if not isinstance(schema, dict):
        raise _Unsupported
    tests: list[Quick] = []
    for key, value in schema.items():
        if key in _ANNOTATIONS:
            continue
        if key == "$schema" and top and value == _DRAFT_2020_12:
            continue
        # An id names the document, and definitions alone validate nothing (a
        # `$ref` into them has no fast path, so they are never used here).
        if key in ("$id", "$defs") and top:
            continue
        tests.append(_keyword(key, value, schema))
    if not tests:
        return lambda v: True
    if len(tests) == 1:
        return tests[0]
    checks = tuple(tests)
    return lambda v: all(test(v) for test in checks)


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _Unsupported
    return value


def _keyword(key: str, value: Any, schema: dict[str, Any]) -> Quick:
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
    if key == "properties":
        if not isinstance(value, dict):
            raise _Unsupported
        subs = tuple((name, _quick(sub)) for name, sub in value.items())
        return lambda v: (
            not isinstance(v, dict) or all(name not in v or sub(v[name]) for name, sub in subs)
        )
    if key == "required":
        if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
            raise _Unsupported
        names = tuple(value)
        return lambda v: not isinstance(v, dict) or all(name in v for name in names)
    if key == "additionalProperties":
        if "patternProperties" in schema:
            raise _Unsupported
        known = frozenset(schema.get("properties", {}))
        if value is False:
            return lambda v: not isinstance(v, dict) or all(name in known for name in v)
        sub = _quick(value)
        return lambda v: (
            not isinstance(v, dict) or all(name in known or sub(item) for name, item in v.items())
        )
    if key == "items":
        if "prefixItems" in schema:
            raise _Unsupported
        sub = _quick(value)
        return lambda v: not isinstance(v, list) or all(sub(item) for item in v)
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
        search = _compile_pattern(value).search  # the same engine as the validator's
        return lambda v: not isinstance(v, str) or search(v) is not None
    if key == "uniqueItems":
        if value is False:
            return lambda v: True
        if value is not True:
            raise _Unsupported
        # Known only for strings (jsonschema's equality of 1 and True, 1 and 1.0, is its own).
        return lambda v: (
            not isinstance(v, list)
            or (all(isinstance(item, str) for item in v) and len(set(v)) == len(v))
        )
    raise _Unsupported
