"""The `schema` predicate's loading: inline schemas or `{$ref: file}`, checked when the suite loads.

Validation uses the schema's declared draft (2020-12 by default) with holon's
numbers: `Decimal` is a number and `1.0` is an integer. A schema may use only
local references (`#/$defs/…`): anything else could not be resolved offline
and would fail at grading time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from jsonschema.validators import validator_for

from evals.checks._scoring import SchemaPredicate
from schema import validator_class
from schema.documents import PathKey, load_document
from schema.errors import CheckError, InputError

ErrorFactory = Callable[..., CheckError]


def check_validator_class(schema: Any) -> Any:
    """The validator class a `schema` check grades with: the schema's declared draft
    (2020-12 by default) with holon's numbers and RE2 patterns, no format assertions.

    The gateway checks live outputs with this same class (evals.suites.Contract),
    so an output that passes a suite's output schema check passes live, and back.
    """
    return validator_class(validator_for(schema, default=Draft202012Validator))


def _refs(schema: Any, at: PathKey) -> Iterator[tuple[str, PathKey]]:
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                yield value, (*at, key)
            else:
                yield from _refs(value, (*at, key))
    elif isinstance(schema, list):
        for index, value in enumerate(schema):
            yield from _refs(value, (*at, index))


class SchemaLoader:
    """Builds `schema` predicates; a file referenced by many checks is read once."""

    def __init__(self, base_dir: Path | None, error: ErrorFactory) -> None:
        self.base_dir = base_dir
        self.error = error
        self.files: dict[Path, tuple[Any, Any]] = {}

    def predicate(self, value: Any, at: PathKey) -> SchemaPredicate:
        if isinstance(value, dict) and set(value) == {"$ref"} and isinstance(value["$ref"], str):
            if not value["$ref"].startswith("#"):
                validator, label = self.from_file(value["$ref"], (*at, "$ref"))
                return SchemaPredicate(validator, label)
        if not isinstance(value, dict | bool):
            raise self.error("schema is a JSON Schema (a mapping) or {$ref: file}", at)
        return SchemaPredicate(self.validator(value, at, inline=True), "the schema")

    def validator(self, schema: Any, at: PathKey, *, inline: bool, label: str = "") -> Any:
        """A validator for `schema`; faults point inside an inline schema, or at the `$ref`."""
        where = "" if inline else f" in {label}"
        for ref, ref_at in _refs(schema, ()):
            if not ref.startswith("#"):
                raise self.error(
                    f"only local references (#/…) work in a check's schema, found {ref!r}{where}",
                    (*at, *ref_at) if inline else at,
                )
        cls = check_validator_class(schema)
        try:
            cls.check_schema(schema)
        except SchemaError as exc:
            inside = (*at, *exc.absolute_path) if inline else at
            raise self.error(f"invalid JSON Schema{where}: {exc.message}", inside) from None
        return cls(schema)

    def from_file(self, ref: str, at: PathKey) -> tuple[Any, str]:
        if self.base_dir is None:
            raise self.error("schema {$ref: file} needs the suite directory to resolve against", at)
        relative = Path(ref)
        base = self.base_dir.resolve()
        target = (base / relative).resolve()
        if relative.is_absolute() or not target.is_relative_to(base):
            raise self.error(
                f"{ref!r} is outside the suite directory (paths are relative to it)", at
            )
        if target not in self.files:
            try:
                document = load_document(target)
            except InputError as exc:
                raise self.error(f"cannot use schema {ref!r}: {exc}", at) from None
            self.files[target] = (self.validator(document.value, at, inline=False, label=ref), ref)
        return self.files[target]
