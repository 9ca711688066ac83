"""Reading a JSON column back: whatever text a store holds, the row reads.

The columns are written by `schema.jsontext.dumps` and read by `loads`. But
a store keeps what an older holon wrote: `dumps` writes a Decimal in plain
digits, so an agent's `1e1000000` was stored as a million digits, which
`loads` (Python's int) refuses past 4,300 digits, and a row that does not
read takes its whole query down (every report of that eval, for good). So
what `loads` refuses is read again permissively: an integer too long for
`int` becomes the Decimal of its digits, NaN and infinities the Decimals
they spell. Text that is not JSON even then (nesting deeper than the
interpreter's recursion limit, a damaged file) reads as a placeholder
object naming its size and digest, and a warning is logged: the row still
reads, and the text stays in the database as it was.
"""

from __future__ import annotations

import hashlib
import json
import logging
from decimal import Decimal
from typing import Any

from schema.jsontext import loads

__all__ = ["UNREADABLE_KEY", "read_stored_json"]

logger = logging.getLogger(__name__)

UNREADABLE_KEY = "holon_unreadable_json"
# Python refuses int() of longer text (sys.get_int_max_str_digits, 4,300 by default).
_INT_DIGITS = 4_000


def _int_or_decimal(text: str) -> int | Decimal:
    digits = len(text) - (1 if text.startswith("-") else 0)
    return int(text) if digits <= _INT_DIGITS else Decimal(text)


_PERMISSIVE = json.JSONDecoder(
    parse_float=Decimal, parse_int=_int_or_decimal, parse_constant=Decimal
)


def read_stored_json(text: str | bytes) -> Any:
    """The value of a stored JSON text; never raises on what a store holds."""
    try:
        return loads(text, bounded=False)  # what holon wrote was bounded when it came in
    except Exception:  # whatever loads refuses (it may refuse more one day) reads again
        return _read_again(text)


def _read_again(text: str | bytes) -> Any:
    if isinstance(text, bytes | bytearray):
        # As loads does: UTF-8, -16 or -32, detected from the first bytes.
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    try:
        return _PERMISSIVE.decode(text)
    except (ValueError, RecursionError) as exc:
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        logger.warning(
            "a stored JSON value of %d characters (sha256 %s) does not read: %s",
            len(text),
            digest[:16],
            type(exc).__name__,
        )
        return {UNREADABLE_KEY: {"characters": len(text), "sha256": digest}}
