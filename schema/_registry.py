"""Validators over the shipped JSON Schema documents (`schema._files` finds and reads them)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import jsonschema
import re2
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry, Resource

from schema._files import SCHEMA_DIR, load_schema
from schema._quick import Quick, is_integer
from schema._quick import quick_validity as _quick_validity


def _is_integer(checker: Any, instance: object) -> bool:
    # JSON Schema: 1.0 is an integer. Documents carry non-integral numbers as
    # Decimal, which jsonschema's own checker does not know about.
    return is_integer(instance)


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


def quick_validity(schema: Any) -> Quick | None:
    """`schema._quick.quick_validity` with `pattern` on the full validator's engine (RE2)."""
    return _quick_validity(schema, _compile_pattern)
