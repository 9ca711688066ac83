"""Agent text made visible: the characters that hide, reorder or break text, shown as escapes.

An agent's output (and a case's id, a tag, a suite's title: author text) can
hold characters a reader never sees: bidi controls that reverse what follows
(U+202E makes `txt.exe` read `exe.txt`), zero-width characters, NUL and
other controls, line separators, tag characters that smuggle invisible
ASCII, lone surrogates that UTF-8 cannot even encode. Reports show each of
them as an escape (`\\u202e`, `\\x00`, `\\U000e0041`), the convention of
`agents.printable`, so what a report shows is what the agent sent.

Which characters: control (Cc, except tab and newline, which text keeps),
format (Cf: every bidi control U+202A–202E, U+2066–2069, U+200E/F, U+061C,
the zero-width U+200B–200D, U+2060–2064, U+FEFF, soft hyphen, tag
characters U+E0000–E007F, ...), surrogate (Cs) and the line and paragraph
separators U+2028/2029. Not the other spaces (they show as spaces), private
use or unassigned code points (a glyph box at worst; which code points are
unassigned changes with the Unicode version). The class is spelled out here
rather than computed from `unicodedata` at import (1.1 million look-ups);
tests/evals/reports/test_visible.py checks it against the categories.
"""

from __future__ import annotations

# One fixed character class, matched in linear time whatever the text (no
# pattern of an author's, nothing to backtrack); and RE2 reads UTF-8, which
# has no lone surrogates, so it could not find them.
import re  # noqa: TID251
from collections.abc import Iterator

__all__ = ["UNSAFE", "UNSAFE_CLASS", "escape_char", "visible", "visible_runs", "xml_text"]

# Cc minus \t \n; the Cf list of Unicode 14 (Python 3.11's unicodedata); Cs; Zl; Zp.
UNSAFE_CLASS = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f"
    "\ud800-\udfff\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U00013438\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
UNSAFE = re.compile(f"[{UNSAFE_CLASS}]+")


def escape_char(char: str) -> str:
    """One character as a backslash escape: `\\x1b`, `\\u202e`, `\\U000e0041`."""
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def visible_runs(text: str) -> Iterator[tuple[str, bool]]:
    """`text` cut into runs: (plain text, False) and (escapes of unsafe characters, True).

    Each renderer escapes the plain runs its own way and marks the escaped
    ones as escapes (HTML styles them; Markdown shows them as they are).
    """
    start = 0
    for match in UNSAFE.finditer(text):
        if match.start() > start:
            yield text[start : match.start()], False
        yield "".join(escape_char(c) for c in match.group()), True
        start = match.end()
    if start < len(text) or not text:
        yield text[start:], False


def visible(text: str) -> str:
    """`text` with every unsafe character as its escape (plain text, for code blocks and titles)."""
    if UNSAFE.search(text) is None:
        return text
    return "".join(piece for piece, _ in visible_runs(text))


def xml_text(text: str) -> str:
    """Text for an XML 1.0 document (JUnit): visible, and without the two non-characters
    XML cannot hold at all (U+FFFE, U+FFFF), which `visible` leaves as they are."""
    return visible(text).replace("\ufffe", "\\ufffe").replace("\uffff", "\\uffff")
