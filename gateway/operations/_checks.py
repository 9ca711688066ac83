"""The checks request fields share (`Param.check`): each takes the value a door read and
the field's name as that door spells it (`--expires-in`, `$.expires_in`), and returns the
value, or raises the located 400 `usage` error."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gateway.operations._declare import param
from schema.errors import UsageError

Check = Callable[[Any, str], Any]


def one_of(name: str, allowed: tuple[str, ...]) -> Check:
    """A value among `allowed` (a report's format, its audience)."""

    def check(value: Any, where: str) -> str:
        if value not in allowed:
            raise UsageError(f"{name} must be one of {', '.join(allowed)}")
        return str(value)

    return check


def integer(default: int | None, name: str, low: int, high: int, help: str) -> Any:
    """A body field that is a JSON integer from `low` to `high` (not a boolean, which JSON
    keeps apart): its check and its schema's bounds from one declaration."""

    def check(value: Any, where: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UsageError(
                f"{name} must be an integer from {low} to {high}", details={"path": where}
            )
        return value

    return param(default, help=help, where="body", check=check, minimum=low, maximum=high)


def text(expected: str, most: int, starts: tuple[str, ...] = ("",)) -> Check:
    """A string of 1 to `most` characters beginning with one of `starts` (a URL's
    scheme), named `expected` in its error."""

    def check(value: Any, where: str) -> str:
        if not isinstance(value, str) or not value or not value.startswith(starts):
            raise UsageError(f"{where}: expected {expected}", details={"path": where})
        if len(value) > most:
            raise UsageError(f"{where}: at most {most} characters", details={"path": where})
        return value

    return check


def _as_given(value: Any, where: str) -> Any:
    return value


def given(help: str, schema: Mapping[str, Any], *, required: bool = False) -> Any:
    """A body field holding a document that the run checks itself (a certificate's
    signature, a key set, a revocation list), so the door takes it as given."""
    if required:
        return param(required=True, help=help, where="body", check=_as_given, schema=schema)
    return param(help=help, where="body", check=_as_given, schema=schema)


def flag(help: str) -> Any:
    """A body field that is true or false (false when left out): JSON's own truth."""
    return param(False, help=help, where="body", check=lambda value, where: bool(value))


# records' MAX_URL_CHARS (what a kept URL is cut to), spelled out: building the CLI's
# parser loads no store code. tests/gateway/test_operations.py checks they agree.
MAX_URL_CHARS = 500


def url(help: str) -> Any:
    """A body field that is an http(s) URL of at most MAX_URL_CHARS characters."""
    return param(
        help=help,
        where="body",
        check=text("an http(s) URL", MAX_URL_CHARS, ("https://", "http://")),
        schema={"type": "string", "maxLength": MAX_URL_CHARS},
    )
