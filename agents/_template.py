"""The user-message template of an `openai-chat` agent: `{{input}}` and `{{input.a.b}}`.

Why this and not str.format, Jinja or JSONPath: the template is operator
text and the input is a caller's, so neither may run code or reach
attributes (`str.format` reaches `{0.__class__}`; a template engine is a
language). The only placeholders are `{{input}}` and `{{input.NAME...}}`
(names of letters, digits and `_`), each replaced, in one pass, by the
value at that path written as compact JSON (a string keeps its quotes, so
a caller's text is always delimited and escaped; a missing field is
`null`). A value is never re-read for placeholders, so an input holding
`{{input}}` stays that text. Any other `{{...}}` is refused when the
manifest is read.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from schema.jsontext import JSONValue, dumps

__all__ = ["TemplateError", "check_template", "render_template"]

_OPEN, _CLOSE = "{{", "}}"


class TemplateError(Exception):
    """The template uses something other than `{{input}}` / `{{input.field}}`."""


def _is_name(text: str) -> bool:
    return (
        bool(text) and text.isascii() and not text[0].isdigit() and text.replace("_", "a").isalnum()
    )


@lru_cache(maxsize=256)
def _parse(template: str) -> tuple[tuple[str, tuple[str, ...] | None], ...]:
    """The template as (literal text, input path or None) pieces, or TemplateError."""
    pieces: list[tuple[str, tuple[str, ...] | None]] = []
    at = 0
    while (start := template.find(_OPEN, at)) >= 0:
        end = template.find(_CLOSE, start + 2)
        if end < 0:
            break
        inner = template[start + 2 : end].strip()
        names = inner.split(".")
        if names[0] != "input" or not all(_is_name(name) for name in names[1:]):
            shown = template[start : end + 2][:80]
            raise TemplateError(
                f"unknown placeholder {shown!r}: only {{{{input}}}} and "
                "{{input.field.sub}} are replaced"
            )
        pieces.append((template[at:start], tuple(names[1:])))
        at = end + 2
    pieces.append((template[at:], None))
    return tuple(pieces)


def check_template(template: str) -> None:
    """Raise TemplateError naming the first placeholder that is not an input path."""
    _parse(template)


def _at(value: JSONValue, path: tuple[str, ...]) -> JSONValue:
    current: Any = value
    for name in path:
        if not isinstance(current, dict) or name not in current:
            return None
        current = current[name]
    result: JSONValue = current
    return result


def render_template(template: str, input: JSONValue) -> str:
    """`template` with each placeholder replaced by the JSON of the input at its path."""
    out: list[str] = []
    for text, path in _parse(template):
        out.append(text)
        if path is not None:
            out.append(dumps(_at(input, path)))
    return "".join(out)
