"""A parameter's text: the one check of every path and query parameter, and of every
body value that names something (an agent, a capability, a suite).

At the floor of the gateway: the HTTP plumbing (gateway/web) checks parameters
with it, and the operation table (gateway/operations) checks a body's named
things with the same rule, so a named thing is refused alike wherever it came in.
"""

from __future__ import annotations

from typing import Any

from schema.errors import UsageError

__all__ = ["MAX_PARAM_CHARS", "has_control", "id_text"]

MAX_PARAM_CHARS = 1024  # a path or query parameter (ids, cursors, filters)
# C0 controls and DEL, deleted by str.translate: a string with one differs from its translation.
_CONTROLS = dict.fromkeys([*range(0x20), 0x7F])


def has_control(text: str) -> bool:
    """PostgreSQL refuses NUL in text; no name needs any control character."""
    return text.translate(_CONTROLS) != text


def id_text(value: Any, where: str, what: str) -> str:
    """A body value that names something (an agent, a capability, a suite), at JSON path
    `where`: a short string with no control characters, as a path parameter would be."""
    if not isinstance(value, str) or not value or len(value) > MAX_PARAM_CHARS:
        raise UsageError(f"{where} must be {what}", details={"path": where})
    if has_control(value):
        raise UsageError(f"{where} has a control character", details={"path": where})
    return value
