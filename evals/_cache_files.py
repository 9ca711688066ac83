"""Files of holon's content-addressed caches on the user's disk (responses, fixtures).

Both keep one JSON file per entry, `<key[:2]>/<key>.json`, holding the
entry's format, its key and a checksum of what it keeps. A cache is only
ever a shortcut: a file that is missing, unreadable, or not what its name
says is a miss, never an error (each cache logs it and makes the entry anew).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["check_entry", "entry_path", "read_entry"]


def entry_path(directory: Path, key: str) -> Path:
    return directory / key[:2] / f"{key}.json"


def read_entry(path: Path, log: logging.Logger, cache: str) -> bytes | None:
    """The bytes of an entry's file, or None: absent, or unreadable (logged as `cache`'s)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("%s: cannot read %s: %s", cache, path, exc)
        return None


def check_entry(entry: Any, key: str, format: int, checksum: Callable[[], str]) -> None:
    """ValueError unless the parsed `entry` is the one named `key`, written in `format`,
    with the checksum `checksum()` computes of what it keeps (asked only then)."""
    if entry["format"] != format or entry["key"] != key:
        raise ValueError("another key or format")
    if entry["checksum"] != checksum():
        raise ValueError("checksum mismatch")
