"""Read YAML or JSON documents strictly, keeping where every value came from.

A `Document` is the plain JSON-like value (dicts, lists, str, int, `Decimal`
for non-integral numbers, bool, None) plus a map from JSON paths to
(line, column), so any later complaint can name file:line:col. Timestamps
stay strings (JSON Schema `format: date-time` judges them); duplicate keys,
NaN/Infinity and non-string keys are errors.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from schema.errors import InputError, Location

PathKey = tuple[str | int, ...]

MAX_DOCUMENT_BYTES = 1 << 20  # manifests, suites, mandates: far smaller in practice


class _Constructor(RoundTripConstructor):
    """Numbers as int / Decimal (never float), timestamps as their text."""

    def construct_yaml_float(self, node: Any) -> Any:
        text = str(node.value).replace("_", "")
        try:
            number = Decimal(text)
        except InvalidOperation:
            number = Decimal("NaN")
        if not number.is_finite():
            raise MarkedYAMLError(
                problem=f"{node.value!r} is not a finite number (JSON has no NaN or Infinity)",
                problem_mark=node.start_mark,
            )
        return number

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
        return str(node.value)


_Constructor.add_constructor("tag:yaml.org,2002:float", _Constructor.construct_yaml_float)
_Constructor.add_constructor("tag:yaml.org,2002:timestamp", _Constructor.construct_yaml_timestamp)


def _yaml() -> YAML:
    yaml = YAML(typ="rt", pure=True)
    yaml.Constructor = _Constructor
    yaml.allow_duplicate_keys = False
    return yaml


@dataclass
class Document:
    """A loaded document: its value and the position of every node in the source."""

    value: Any
    file: str | None = None
    positions: dict[PathKey, tuple[int, int]] = field(default_factory=dict)

    def location(self, path: PathKey = ()) -> Location:
        """The closest known position for `path` (walking up to its parents)."""
        probe = tuple(path)
        while probe not in self.positions and probe:
            probe = probe[:-1]
        line, column = self.positions.get(probe, (None, None))
        return Location(self.file, line, column, format_path(path) if path else None)

    def error(
        self, message: str, path: PathKey = (), *, cls: type[InputError] = InputError, **kw: Any
    ) -> InputError:
        return cls(message, location=self.location(path), **kw)


def format_path(path: PathKey) -> str:
    """`("limits", "timeout_s")` -> `$.limits.timeout_s`; indexes as `[0]`."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            escaped = part.replace("\\", "\\\\").replace("'", "\\'")
            out += f"['{escaped}']"
    return out


def _plain(node: Any, path: PathKey, positions: dict[PathKey, tuple[int, int]]) -> Any:
    if isinstance(node, CommentedMap):
        out: dict[str, Any] = {}
        for key in node:
            if not isinstance(key, str):
                line, col = node.lc.key(key)
                raise InputError(
                    f"keys must be strings, got {key!r}",
                    location=Location(None, line + 1, col + 1, format_path(path)),
                )
            line, col = node.lc.key(key)
            positions[(*path, key)] = (line + 1, col + 1)
            out[key] = _plain(node[key], (*path, key), positions)
        return out
    if isinstance(node, CommentedSeq):
        items = []
        for index, item in enumerate(node):
            line, col = node.lc.item(index)
            positions[(*path, index)] = (line + 1, col + 1)
            items.append(_plain(item, (*path, index), positions))
        return items
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, Decimal):
        return node
    if isinstance(node, str):
        return str(node)
    if isinstance(node, float):  # pragma: no cover - the constructor makes Decimals
        return Decimal(repr(node))
    raise InputError(f"unsupported value {node!r}", location=Location(path=format_path(path)))


def parse_document(text: str, file: str | None = None) -> Document:
    """Parse YAML (or JSON, which is YAML 1.2) text into a `Document`."""
    positions: dict[PathKey, tuple[int, int]] = {(): (1, 1)}
    try:
        raw = _yaml().load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        column = mark.column + 1 if mark is not None else None
        problem = exc.problem or exc.context or "not valid YAML or JSON"
        if "found duplicate key" in str(exc):
            problem = "duplicate key " + problem.split("found duplicate key", 1)[-1].strip()
        raise InputError(f"{problem}", location=Location(file, line, column)) from None
    except YAMLError as exc:
        raise InputError(f"not valid YAML or JSON: {exc}", location=Location(file)) from None
    try:
        value = _plain(raw, (), positions)
    except InputError as exc:
        loc = exc.location
        raise InputError(
            exc.message, location=Location(file, loc.line, loc.column, loc.path)
        ) from None
    return Document(value, file, positions)


def read_text(
    path: str | Path,
    *,
    max_bytes: int = MAX_DOCUMENT_BYTES,
    expected: str = "a YAML or JSON file",
    cls: type[InputError] = InputError,
) -> str:
    """A UTF-8 text file, or `cls` naming the file and what is wrong with it.

    The one place files given by people are read: missing, a directory,
    oversized, not UTF-8 or unreadable all say so the same way.
    """
    where = Location(str(path))
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > max_bytes:
            raise cls(f"file is {size} bytes, more than the {max_bytes} read", location=where)
        return p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise cls("no such file", location=where) from None
    except IsADirectoryError:
        raise cls(f"is a directory, expected {expected}", location=where) from None
    except UnicodeDecodeError as exc:
        raise cls(f"not UTF-8 text (byte {exc.start})", location=where) from None
    except OSError as exc:
        raise cls(f"cannot read: {exc.strerror}", location=where) from None


def load_document(path: str | Path) -> Document:
    """Read a YAML or JSON file; unreadable, oversized or non-UTF-8 files are InputErrors."""
    return parse_document(read_text(path), str(path))


def _errors(validator: Validator, value: Any) -> Iterator[ValidationError]:
    yield from validator.iter_errors(value)


def explain(error: ValidationError) -> tuple[str, PathKey]:
    """A readable message and the path it is about, for one jsonschema error."""
    if error.validator in ("oneOf", "anyOf") and error.context:
        # "not valid under any of the given schemas" helps nobody: explain
        # the alternative that came closest instead.
        deepest = max(error.context, key=lambda e: (len(e.absolute_path), -len(e.context)))
        return explain(deepest)
    path: PathKey = tuple(error.absolute_path)
    kind = error.validator
    schema = error.schema if isinstance(error.schema, dict) else {}
    instance = error.instance
    if kind == "additionalProperties" and isinstance(instance, dict):
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(k for k in instance if k not in schema.get("properties", {}))
        key = extra[0] if extra else ""
        close = difflib.get_close_matches(key, allowed, n=1)
        hint = (
            f"; did you mean {close[0]!r}?" if close else f"; expected one of {', '.join(allowed)}"
        )
        return f"unknown key {key!r}{hint}", (*path, key)
    if kind == "required":
        missing = str(error.message).split("'")[1] if "'" in error.message else "?"
        return f"missing required key {missing!r}", path
    if kind == "type":
        what = schema.get("description") or _expected_type(error.validator_value)
        return f"expected {what}, got {_describe(instance)}", path
    if kind == "enum":
        options = ", ".join(repr(v) for v in error.validator_value)
        return f"expected one of {options}, got {_describe(instance)}", path
    if kind == "const":
        return f"expected {error.validator_value!r}, got {_describe(instance)}", path
    if kind == "pattern":
        what = schema.get("description") or f"text matching {error.validator_value}"
        return f"expected {what}, got {_describe(instance)}", path
    if kind in {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}:
        words = {
            "minimum": ">=",
            "maximum": "<=",
            "exclusiveMinimum": ">",
            "exclusiveMaximum": "<",
        }
        return (
            f"expected a number {words[kind]} {error.validator_value}, got {_describe(instance)}",
            path,
        )
    if kind in {"minItems", "maxItems", "minLength", "maxLength", "uniqueItems"}:
        return f"{error.message}", path
    return error.message, path


def _expected_type(value: Any) -> str:
    names = value if isinstance(value, list) else [value]
    article = {"array": "an array", "object": "an object", "integer": "an integer"}
    return " or ".join(article.get(n, f"a {n}") for n in names)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate_document(
    document: Document,
    validator: Validator,
    *,
    cls: type[InputError] = InputError,
    what: str = "document",
) -> None:
    """Raise `cls` for the first schema violation (by position); all of them go in details."""
    problems = []
    for error in _errors(validator, document.value):
        message, path = explain(error)
        location = document.location(path)
        problems.append((location.line or 0, location.column or 0, message, path, location))
    if not problems:
        return
    # By position, except that a missing key comes after an unknown one: the
    # unknown key is usually the missing one, misspelt, and says more.
    problems.sort(key=lambda p: (p[2].startswith("missing required"), p[0], p[1], len(p[3])))
    line, column, message, path, location = problems[0]
    details = {
        "errors": [{**loc.as_dict(), "message": msg} for _, _, msg, _, loc in problems[:20]],
    }
    raise cls(f"invalid {what}: {message}", location=location, details=details)
