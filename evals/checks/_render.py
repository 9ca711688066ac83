"""Typed, truncated renderings of values, and the CLI block for one check result.

A rendering is one line, deterministic, and at most 200 characters: strings
JSON-quoted, numbers as their JSON text (`1234.50` stays `1234.50`), arrays
and objects typed with their size and at most five items (object keys
sorted): `array(23) ["A-001", "A-002", "A-003", "A-004", "A-005", … +18]`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import PurePath
from typing import TYPE_CHECKING, Any, Final

from evals.checks._values import MISSING, kind_of
from schema.errors import Location
from schema.jsontext import decimal_text

if TYPE_CHECKING:
    from evals.checks._results import CheckResult

MAX_CHARS: Final = 200
MAX_ITEMS: Final = 5
_TOP_STRING: Final = 120  # characters of a string shown on its own
_NESTED_STRING: Final = 40  # characters of a string shown inside an array or object
ELLIPSIS: Final = "…"
_SHORT: Final = 80  # characters of a value inside a detail line


_encode: Callable[[str], str] = json.encoder.encode_basestring
_encode_ascii: Callable[[str], str] = json.encoder.encode_basestring_ascii


def _quote(text: str) -> str:
    """A JSON string literal; ASCII-escaped only if it holds a lone surrogate (not UTF-8)."""
    quoted = _encode(text)
    if text.isascii():
        return quoted
    try:
        quoted.encode("utf-8")
    except UnicodeEncodeError:
        return _encode_ascii(text)
    return quoted


def _number(value: Any) -> str:
    if type(value) is Decimal:
        try:
            return decimal_text(value)
        except ValueError:
            return str(value)
    if type(value) is float:
        return repr(value)
    return int.__repr__(value)


def _scalar(value: Any) -> str | None:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    kind = type(value)
    if kind is int or kind is Decimal or kind is float:
        return _number(value)
    return None


def _string(text: str, limit: int, typed: bool) -> str:
    if len(text) <= limit:
        return _quote(text)
    shown = _quote(text[:limit])[:-1] + ELLIPSIS + '"'
    return f"string({len(text)}) {shown}" if typed else shown


def _container(value: Any, depth: int) -> str:
    is_object = isinstance(value, dict)
    size = len(value)
    if depth >= 2:
        return f"{'object' if is_object else 'array'}({size})"
    if is_object:
        keys = sorted(value)[:MAX_ITEMS]
        parts = [f"{_quote(k)}: {_nested(value[k], depth + 1)}" for k in keys]
    else:
        parts = [_nested(item, depth + 1) for item in value[:MAX_ITEMS]]
    if size > MAX_ITEMS:
        parts.append(f"{ELLIPSIS} +{size - MAX_ITEMS}")
    body = ", ".join(parts)
    return f"{{{body}}}" if is_object else f"[{body}]"


def _nested(value: Any, depth: int) -> str:
    scalar = _scalar(value)
    if scalar is not None:
        return scalar
    if isinstance(value, str):
        return _string(value, _NESTED_STRING, typed=False)
    if isinstance(value, dict | list | tuple):
        return _container(value, depth)
    return _quote(repr(value))


def _clip(text: str) -> str:
    if len(text) <= MAX_CHARS:
        return text
    return text[: MAX_CHARS - 1] + ELLIPSIS


# Renderings of short strings, which repeat from cell to cell (labels, enums):
# rendering each result's actual and expected values is a sizeable part of
# recording a cell.
_STRINGS: dict[str, str] = {}
_STRINGS_MAX = 4096
_CACHED_CHARS = 64


def render_value(value: Any) -> str:
    """The typed, truncated one-line rendering of a JSON value (MISSING is `nothing`)."""
    if type(value) is str:
        known = _STRINGS.get(value)
        if known is None:
            known = _clip(_string(value, _TOP_STRING, typed=True))
            if len(value) <= _CACHED_CHARS:
                if len(_STRINGS) >= _STRINGS_MAX:
                    _STRINGS.clear()
                _STRINGS[value] = known
        return known
    scalar = _scalar(value)
    if scalar is not None:
        return scalar
    if isinstance(value, str):
        return _clip(_string(value, _TOP_STRING, typed=True))
    if isinstance(value, dict):
        return _clip(f"object({len(value)}) {_container(value, 0)}")
    if isinstance(value, list | tuple):
        return _clip(f"array({len(value)}) {_container(value, 0)}")
    if value is MISSING:
        return "nothing"
    return _clip(_quote(repr(value)))


def short(value: Any) -> str:
    """A rendering for inside a detail line: small containers untyped (`["a", "b"]`), ≤ 80 chars."""
    if isinstance(value, list | tuple | dict) and len(value) <= MAX_ITEMS:
        text = _container(value, 0)
    else:
        text = render_value(value)
    return text if len(text) <= _SHORT else text[: _SHORT - 1] + ELLIPSIS


def describe_kind(value: Any) -> str:
    """A value with its kind, for type mismatches: `string "12"`, `array(3) [1, 2, 3]`, `null`."""
    kind = kind_of(value)
    if kind == "null":
        return "null"
    if kind == "array" or kind == "object":
        text = render_value(value)
        return text if len(text) <= _SHORT else text[: _SHORT - 1] + ELLIPSIS
    text = short(value)
    if text.startswith("string("):
        return text
    return f"{kind} {text}"


def source_text(location: Location | None) -> str | None:
    """`suite.yaml:42` for a check's source, or None when not known."""
    if location is None or location.file is None:
        return None
    name = PurePath(location.file).name or location.file
    return f"{name}:{location.line}" if location.line is not None else name


def _label(label: str, text: str) -> str:
    return f"  {label + ':':<10}{text}"


def render_result(result: CheckResult, source: Location | str | None = None) -> list[str]:
    """The CLI block for one result: a header line, then path, expected, actual and notes.

    A passing check is its header line alone.
    """
    where = source if isinstance(source, str) else source_text(source or result.source)
    head = result.status.upper()
    title = result.name
    if result.predicate and not title.startswith(result.predicate + " "):
        title = f"{result.predicate} {title}"
    header = f"{head} {title}" + (f" ({where})" if where else "")
    if result.passed:
        return [header]
    lines = [header]
    if result.path is not None:
        path_line = result.path
        if result.nodes is not None:
            noun = "node" if result.nodes == 1 else "nodes"
            path_line += f" -> {result.nodes} {noun}"
        lines.append(_label("path", path_line))
    if result.expected is not None:
        lines.append(_label("expected", result.expected))
    if result.actual is not None:
        lines.append(_label("actual", result.actual))
    notes = result.notes
    if notes:
        lines.extend(_label(label, text) for label, text in notes)
    else:
        lines.append(_label("detail", result.detail))
    return lines
