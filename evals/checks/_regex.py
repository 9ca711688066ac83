"""RE2 regexes: compiled once, with a caret under the fault when a pattern is bad.

Python's `re` backtracks (a 27-character input took over 8 s in our
measurements), so agent text is only ever matched with RE2, which runs in
linear time. Strings with lone surrogates (legal in JSON text, not in UTF-8)
are matched with each lone surrogate read as U+FFFD.
"""

from __future__ import annotations

import functools
from typing import Any

import re2
from iregexp_check import check as is_iregexp

_MAX_PROGRAM_BYTES = 8 << 20  # RE2's memory budget for one compiled pattern


class PatternError(ValueError):
    """A pattern RE2 refuses; `index` is where in the pattern the fault is."""

    def __init__(self, reason: str, pattern: str, index: int) -> None:
        super().__init__(reason)
        self.reason = reason
        self.pattern = pattern
        self.index = index


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _MAX_PROGRAM_BYTES
    options.never_capture = True  # we only ask whether it matches
    return options


class Regex:
    """A compiled RE2 program that answers yes or no.

    It runs on UTF-8 bytes (RE2's own form; the `str` interface re-maps
    offsets, which we never need), so `.` is one character, as for `str`.
    """

    __slots__ = ("_program", "pattern")

    def __init__(self, pattern: str, program: Any) -> None:
        self.pattern = pattern
        self._program = program

    def search(self, text: str) -> bool:
        return self._program.search(utf8(text)) is not None

    def fullmatch(self, text: str) -> bool:
        return self._program.fullmatch(utf8(text)) is not None


def compile_re2(pattern: str) -> Regex:
    """Compile `pattern` with RE2 (Perl-like: `(?i)`, `\\d`, `\\b`), or raise PatternError."""
    try:
        program = re2.compile(utf8(pattern), _options())
    except re2.error as exc:
        raw = exc.args[0] if exc.args else b""
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        raise PatternError(text, pattern, _fault_index(text, pattern)) from None
    return Regex(pattern, program)


def _fault_index(message: str, pattern: str) -> int:
    """RE2 names the faulty fragment after a colon; find where it starts in the pattern."""
    if message.startswith("unexpected )"):
        return _parens(pattern)[0]
    if message.startswith("missing )"):
        return _parens(pattern)[1]
    if message.startswith("trailing \\"):
        return max(len(pattern) - 1, 0)
    _, _, fragment = message.partition(": ")
    if fragment:
        found = pattern.rfind(fragment) if message.startswith("missing") else pattern.find(fragment)
        if found >= 0:
            return found
    return 0


def _parens(pattern: str) -> tuple[int, int]:
    """The first `)` that closes nothing, and the first `(` never closed (0 when none)."""
    opened: list[int] = []
    escaped = False
    in_class = False
    stray = -1
    for index, char in enumerate(pattern):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "(":
            opened.append(index)
        elif char == ")":
            if opened:
                opened.pop()
            elif stray < 0:
                stray = index
    return max(stray, 0), opened[0] if opened else 0


def utf8(text: str) -> bytes:
    """`text` as UTF-8 for RE2; a lone surrogate (legal in JSON, not in UTF-8) becomes U+FFFD."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        repaired = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return repaired.encode("utf-8")


_CACHED_PATTERN_CHARS = 1000  # patterns may come from the document: cache only small ones


def iregexp(pattern: str) -> Regex | None:
    """An RFC 9485 I-Regexp as an RE2 program, or None if it is not a valid I-Regexp.

    I-Regexp's `.` matches any character but CR and LF; the rest of its syntax
    is a subset RE2 reads the same way.
    """
    if len(pattern) <= _CACHED_PATTERN_CHARS:
        return _cached_iregexp(pattern)
    return _iregexp(pattern)


@functools.lru_cache(maxsize=512)
def _cached_iregexp(pattern: str) -> Regex | None:
    return _iregexp(pattern)


def _iregexp(pattern: str) -> Regex | None:
    if not is_iregexp(pattern):
        return None
    out: list[str] = []
    escaped = False
    in_class = False
    for char in pattern:
        if escaped:
            out.append(char)
            escaped = False
        elif char == "\\":
            out.append(char)
            escaped = True
        elif char == "[":
            in_class = True
            out.append(char)
        elif char == "]":
            in_class = False
            out.append(char)
        elif char == "." and not in_class:
            out.append("[^\\n\\r]")
        else:
            out.append(char)
    try:
        return compile_re2("".join(out))
    except PatternError:
        return None
