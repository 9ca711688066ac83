"""Identifiers: ULIDs (time-ordered, 128 bits, Crockford base32)."""

from __future__ import annotations

import secrets
import time

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid() -> str:
    """48 bits of milliseconds then 80 random bits: sortable by creation time."""
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    out = []
    for _ in range(26):
        out.append(_ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def eval_id() -> str:
    return "ev_" + ulid()
