"""Read YAML or JSON documents strictly, keeping where every value came from.

A `Document` is the plain JSON-like value (dicts, lists, str, int, `Decimal`
for non-integral numbers, bool, None) plus a map from JSON paths to
(line, column), so any later complaint can name file:line:col. Timestamps
stay strings (JSON Schema `format: date-time` judges them); duplicate keys,
NaN/Infinity and non-string keys are errors.

Documents come from people and from attackers alike, so every fault is an
`InputError` with a position, never a parser's own exception: YAML tags
other than the plain-data ones (`!!python/...`, `!!binary`, `!!omap`, custom
tags), nesting deeper than `MAX_DEPTH`, aliases that refer to themselves or
expand the document far beyond its text (a "billion laughs"),
lone UTF-16 surrogates (which no UTF-8 encoder or database can store), and
numbers beyond the limits of `schema.numbers` (more than 1000 significant
digits, an exponent beyond ±4000), which are refused at their position
before their value is built.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import re2
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq, TaggedScalar
from ruamel.yaml.constructor import RoundTripConstructor
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.events import CollectionEndEvent, CollectionStartEvent
from ruamel.yaml.reader import ReaderError

from schema._text import MAX_DOCUMENT_BYTES, read_text, write_error, write_file, writing_file
from schema.errors import InputError, Location
from schema.jsontext import PathKey, format_path
from schema.numbers import MAX_NUMBER_DIGITS, number_problem, read_number

if TYPE_CHECKING:  # a validator is handed in: reading a document loads no jsonschema
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "Document",
    "PathKey",
    "explain",
    "format_path",
    "load_document",
    "parse_document",
    "read_text",
    "validate_document",
    "write_error",
    "write_file",
    "writing_file",
]

MAX_DEPTH = 64  # as deep as an agent's answer may nest (agents' max_json_depth)
_MIN_VALUES = 100_000  # values any document may expand to through YAML aliases
_BRACKETS = re2.compile(r"[\[\]{}]")

_CORE = "tag:yaml.org,2002:"
# The tags of plain data; `merge` is `<<: *alias`. Anything else would build
# objects a JSON document cannot hold (or, in other loaders, run code).
_PLAIN_TAGS = {
    _CORE + name for name in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp")
} | {_CORE + "merge"}


class _OutOfRange:
    """A number refused while the YAML is constructed; `_Plain` reports it with its path."""

    __slots__ = ("at", "problem")

    def __init__(self, problem: str, node: Any) -> None:
        self.problem = problem
        self.at = (node.start_mark.line + 1, node.start_mark.column + 1)


class _Constructor(RoundTripConstructor):
    """Numbers as int / Decimal (never float), timestamps as their text."""

    def construct_yaml_float(self, node: Any) -> Any:
        text = str(node.value).replace("_", "")
        if text.lstrip("+-").lower() in (".inf", ".nan"):
            number: Any = Decimal("NaN")
        else:
            number = read_number(text, integral=False)
            if isinstance(number, str):
                return _OutOfRange(number, node)
        if not number.is_finite():
            raise MarkedYAMLError(
                problem=f"{node.value!r} is not a finite number (JSON has no NaN or Infinity)",
                problem_mark=node.start_mark,
            )
        return number

    def construct_yaml_int(self, node: Any) -> Any:
        # Counted before ruamel converts: a long decimal integer is refused
        # without building it (Python refuses past 4300 digits, with a
        # ValueError). Binary, octal and hex convert in linear time; `_Plain`
        # checks their value.
        text = str(node.value).replace("_", "").lstrip("+-")
        if text[:2].lower() not in ("0x", "0o", "0b") and len(text.lstrip("0")) > MAX_NUMBER_DIGITS:
            return _OutOfRange(str(read_number(text, integral=True)), node)
        return super().construct_yaml_int(node)

    def construct_yaml_timestamp(self, node: Any, values: Any = None) -> Any:
        return str(node.value)

    def check_mapping_key(
        self, node: Any, key_node: Any, mapping: Any, key: Any, value: Any
    ) -> Any:
        if isinstance(key, _OutOfRange):
            raise MarkedYAMLError(problem=key.problem, problem_mark=key_node.start_mark)
        # A complex key (`? [a, b]`) may not even hash: refuse it before ruamel looks it up.
        if not isinstance(key, str | int | Decimal | None):
            raise MarkedYAMLError(
                problem="keys must be strings, got a "
                + (
                    "list"
                    if isinstance(key, list | tuple)
                    else "mapping"
                    if hasattr(key, "items")
                    else type(key).__name__
                ),
                problem_mark=key_node.start_mark,
            )
        return super().check_mapping_key(node, key_node, mapping, key, value)

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        tag = str(getattr(node.tag, "value", node.tag))
        if tag not in _PLAIN_TAGS:
            shown = "!!" + tag[len(_CORE) :] if tag.startswith(_CORE) else tag
            raise MarkedYAMLError(
                problem=f"the YAML tag {shown} is not supported: a document is plain data "
                "(mappings, lists, strings, numbers, booleans, null)",
                problem_mark=node.start_mark,
            )
        try:
            return super().construct_object(node, deep)
        except (YAMLError, RecursionError):
            raise
        except Exception as exc:  # e.g. `!!int x`, `!!bool maybe`: the text's fault, not ours
            problem = f"not a valid value: {exc}"
            if isinstance(exc, ValueError) and "integer string conversion" in str(exc):
                problem = "an integer with more digits than a number may have"
            raise MarkedYAMLError(problem=problem, problem_mark=node.start_mark) from None


_Constructor.add_constructor("tag:yaml.org,2002:float", _Constructor.construct_yaml_float)
_Constructor.add_constructor("tag:yaml.org,2002:int", _Constructor.construct_yaml_int)
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


class _Plain:
    """Turns ruamel's round-trip nodes into plain values, recording every position.

    Bounded: nesting deeper than MAX_DEPTH, an alias that contains itself, or
    aliases expanding to more than `budget` values are errors at the node.
    """

    def __init__(self, positions: dict[PathKey, tuple[int, int]], budget: int) -> None:
        self.positions = positions
        self.budget = self.limit = budget
        self.open: set[int] = set()  # ids of the collections being walked (alias cycles)

    def fault(
        self,
        message: str,
        path: PathKey,
        *,
        show_path: bool = True,
        at: tuple[int, int] | None = None,
    ) -> InputError:
        line, column = at if at is not None else self.positions.get(path, (None, None))
        shown = format_path(path) if show_path else None
        return InputError(message, location=Location(None, line, column, shown))

    def value(self, node: Any, path: PathKey) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise self.fault(
                f"YAML aliases expand this document to more than {self.limit} values",
                path,
            )
        if isinstance(node, CommentedMap | CommentedSeq):
            return self.collection(node, path)
        if isinstance(node, bool) or node is None:
            return node
        if isinstance(node, int | Decimal | _OutOfRange):
            if isinstance(node, _OutOfRange):  # at the number itself, not at its key
                raise self.fault(node.problem, path, at=node.at)
            problem = number_problem(node)
            if problem is not None:
                raise self.fault(problem, path)
            return int(node) if isinstance(node, int) else node
        if isinstance(node, TaggedScalar) and str(node.tag) == _CORE + "str":
            node = node.value  # `!!str 1` is the text "1"
        if isinstance(node, str):
            return self.text(str(node), path)
        if isinstance(node, float):  # pragma: no cover - the constructor makes Decimals
            return Decimal(repr(node))
        raise self.fault(f"unsupported value {node!r}"[:200], path)

    def text(self, value: str, path: PathKey) -> str:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            # JSON writes a character past U+FFFF as two escapes (`"\ud83d\ude00"`),
            # which YAML reads as two surrogates: a pair is that one character.
            value = value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone one: no character at all
            raise self.fault(
                f"text holds a lone UTF-16 surrogate ({value[exc.start]!r} at character "
                f"{exc.start}), which is not Unicode text",
                path,
            ) from None
        return value

    def collection(self, node: Any, path: PathKey) -> Any:
        if len(path) >= MAX_DEPTH:
            raise self.fault(f"nested more than {MAX_DEPTH} levels deep", path, show_path=False)
        if id(node) in self.open:
            raise self.fault("a YAML alias refers to a collection that contains it", path)
        self.open.add(id(node))
        try:
            if isinstance(node, CommentedMap):
                return self.mapping(node, path)
            items = []
            for index, item in enumerate(node):
                line, col = node.lc.item(index)
                self.positions[(*path, index)] = (line + 1, col + 1)
                items.append(self.value(item, (*path, index)))
            return items
        finally:
            self.open.discard(id(node))

    def mapping(self, node: CommentedMap, path: PathKey) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in node:
            try:
                line, col = node.lc.key(key)
                here: tuple[int, int] | None = (line + 1, col + 1)
            except (KeyError, TypeError):  # a key merged in by `<<: *alias` lives elsewhere
                here = self.positions.get(path)
            if not isinstance(key, str):
                if here is not None:
                    self.positions[path] = here
                raise self.fault(f"keys must be strings, got {key!r}"[:200], path)
            if here is not None:
                self.positions[(*path, key)] = here
            text = self.text(key, (*path, key))
            if here is not None and text != key:
                self.positions[(*path, text)] = here
            out[text] = self.value(node[key], (*path, text))
        return out


def _too_deep(text: str) -> tuple[int, int] | None:
    """Where the text first nests deeper than MAX_DEPTH, by YAML events (no recursion)."""
    depth = 0
    try:
        for event in _yaml().parse(text):
            if isinstance(event, CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    return event.start_mark.line + 1, event.start_mark.column + 1
            elif isinstance(event, CollectionEndEvent):
                depth -= 1
    except YAMLError:  # a prefix ends mid-document: faults after the depth do not matter
        return None
    return None


def _codepoint(character: Any) -> str:
    code = character if isinstance(character, int) else ord(str(character)[:1] or "\0")
    return f"U+{code:04X}"


def _position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _deep_prefix(text: str) -> str | None:
    """The text up to the first bracket nested deeper than MAX_DEPTH, counting brackets only.

    Brackets in quoted or plain text count too, so this over-estimates: the
    prefix is then parsed for real (`_too_deep`), and only a fault found
    there is one. Counting is cheap; parsing thousands of nested brackets is
    not (ruamel looks ahead up to 1,024 characters for each).
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    depth = 0
    for match in _BRACKETS.finditer(text):
        depth += 1 if match.group() in "[{" else -1
        if depth > MAX_DEPTH:
            return text[: match.end()]
    return None


def parse_document(text: str, file: str | None = None) -> Document:
    """Parse YAML (or JSON, which is YAML 1.2) text into a `Document`."""
    positions: dict[PathKey, tuple[int, int]] = {(): (1, 1)}
    # Thousands of nested brackets take ruamel seconds to minutes before it
    # gives up on its own recursion: refuse them before it starts.
    prefix = _deep_prefix(text)
    if prefix is not None:
        deepest = _too_deep(prefix)
        if deepest is not None:
            raise InputError(
                f"nested more than {MAX_DEPTH} levels deep", location=Location(file, *deepest)
            )
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
    except ReaderError as exc:
        line, column = _position(text, exc.position)
        raise InputError(
            f"not valid YAML or JSON: the character {_codepoint(exc.character)} "
            "is not allowed in a document",
            location=Location(file, line, column),
        ) from None
    except RecursionError:
        line, column = _too_deep(text) or (None, None)
        raise InputError(
            f"nested more than {MAX_DEPTH} levels deep", location=Location(file, line, column)
        ) from None
    except YAMLError as exc:
        raise InputError(f"not valid YAML or JSON: {exc}", location=Location(file)) from None
    except Exception as exc:  # the parser's own fault on hostile text is still the text's
        raise InputError(
            f"not valid YAML or JSON ({type(exc).__name__}: {exc})"[:300], location=Location(file)
        ) from None
    try:
        # Without aliases a document has fewer values than characters; merge
        # keys (`<<: *defaults`) may multiply them a little, a "billion
        # laughs" exponentially: a linear cap tells them apart.
        value = _Plain(positions, budget=max(_MIN_VALUES, 4 * len(text))).value(raw, ())
    except InputError as exc:
        loc = exc.location
        raise InputError(
            exc.message, location=Location(file, loc.line, loc.column, loc.path)
        ) from None
    return Document(value, file, positions)


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
