"""Agent values as reports carry them: bounded, so one huge output can't swamp a report.

An agent's output is kept in full in the database; a report shows it with
every string longer than `STRING_LIMIT` characters cut to its first
`STRING_HEAD` characters plus a note of the length and sha256 of the whole
(a PDF's base64 is not something to read anyway), and an output whose JSON
is still longer than `OUTPUT_LIMIT` replaced by such a note. Deterministic:
the same stored value gives the same text on every run.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from records import utc_text
from schema.jsontext import dumps

__all__ = ["OUTPUT_LIMIT", "STRING_HEAD", "STRING_LIMIT", "bounded", "bounded_text", "timestamp"]

STRING_LIMIT = 600
STRING_HEAD = 200
OUTPUT_LIMIT = 20_000


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def bounded_text(text: str, limit: int = STRING_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:STRING_HEAD]}… [{len(text)} characters in all, sha256 {_sha(text)[:16]}]"


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        return bounded_text(value)
    if isinstance(value, dict):
        return {bounded_text(str(k), 100): _strings(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strings(v) for v in value]
    return value


def bounded(value: Any) -> Any:
    """`value` with long strings cut (see the module docstring); JSON-shaped in and out."""
    out = _strings(value)
    text = dumps(out)
    if len(text) > OUTPUT_LIMIT:
        return f"[output of {len(text)} characters of JSON omitted, sha256 {_sha(text)[:16]}]"
    return out


def timestamp(value: datetime | None) -> str | None:
    """RFC 3339 in UTC with a `Z`, to the second (as the CLI shows times)."""
    return None if value is None else utc_text(value)
