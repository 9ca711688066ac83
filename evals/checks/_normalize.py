"""String normalisers for the `normalize:` modifier, applied in the order listed."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence


def _collapse_whitespace(text: str) -> str:
    """Each run of whitespace becomes one space (ends are kept: `strip` trims them)."""
    if not text:
        return text
    inner = " ".join(text.split())
    if not inner:
        return " "
    lead = " " if text[0].isspace() else ""
    tail = " " if text[-1].isspace() else ""
    return lead + inner + tail


def _digits_only(text: str) -> str:
    """Only the ASCII digits 0-9 (run `nfkc` first to fold full-width digits)."""
    return "".join(ch for ch in text if "0" <= ch <= "9")


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


NORMALIZERS: dict[str, Callable[[str], str]] = {
    "casefold": str.casefold,
    "collapse_whitespace": _collapse_whitespace,
    "digits_only": _digits_only,
    "nfkc": _nfkc,
    "strip": str.strip,
}


def chain(names: Sequence[str]) -> Callable[[str], str]:
    """One function applying the named normalisers left to right (names already validated)."""
    steps = tuple(NORMALIZERS[name] for name in names)

    def normalize(text: str) -> str:
        for step in steps:
            text = step(text)
        return text

    return normalize
