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

from typing import Any

import re2

from schema.jsontext import JSONValue, dumps

__all__ = ["TemplateError", "check_template", "render_template"]

_PLACEHOLDER = re2.compile(r"\{\{\s*(input(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}")
_ANY_BRACES = re2.compile(r"\{\{.*?\}\}")


class TemplateError(Exception):
    """The template uses something other than `{{input}}` / `{{input.field}}`."""


def check_template(template: str) -> None:
    """Raise TemplateError naming the first placeholder that is not an input path."""
    for match in _ANY_BRACES.finditer(template):
        if _PLACEHOLDER.fullmatch(match.group(0)) is None:
            raise TemplateError(
                f"unknown placeholder {match.group(0)[:80]!r}: only {{{{input}}}} and "
                "{{input.field.sub}} are replaced"
            )


def _at(value: JSONValue, path: list[str]) -> JSONValue:
    current: Any = value
    for name in path:
        if not isinstance(current, dict) or name not in current:
            return None
        current = current[name]
    result: JSONValue = current
    return result


def render_template(template: str, input: JSONValue) -> str:
    """`template` with each placeholder replaced by the JSON of the input at its path."""

    def replace(match: Any) -> str:
        path = match.group(1).split(".")[1:]
        return dumps(_at(input, path))

    rendered: str = _PLACEHOLDER.sub(replace, template)
    return rendered
