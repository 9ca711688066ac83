"""Cursor pagination: opaque cursors over a unique, ordered key."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from schema.errors import UsageError

T = TypeVar("T")

MAX_PAGE = 1000


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[T]
    next_cursor: str | None


def page_of(items: list[T], limit: int, key: Callable[[T], str]) -> Page[T]:
    """The page of a listing read `limit + 1` items deep: its first `limit` items, and when
    an item was left over, a cursor at the last of them (`key`: the position it names)."""
    if len(items) > limit:
        return Page(items[:limit], encode_cursor(key(items[limit - 1])))
    return Page(items, None)


def encode_cursor(key: str) -> str:
    return base64.urlsafe_b64encode(key.encode("utf-8")).decode("ascii").rstrip("=")


def decode_cursor(cursor: str | None) -> str | None:
    if not cursor:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8")
    except (binascii.Error, UnicodeError, ValueError):
        raise UsageError(f"not a valid cursor: {cursor!r}") from None


def check_limit(limit: int) -> int:
    if not 1 <= limit <= MAX_PAGE:
        raise UsageError(f"limit must be between 1 and {MAX_PAGE}, got {limit}")
    return limit
