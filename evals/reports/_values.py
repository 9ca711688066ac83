"""Stored values as reports carry them: bounded, so no output can swamp or break a report.

An agent's output is kept in full in the database; a report shows it with
every string longer than `STRING_LIMIT` characters cut to its first
`STRING_HEAD` characters plus a note of the length and sha256 of the whole
(a PDF's base64 is not something to read anyway), every number whose JSON
text would be longer than `NUMBER_CHARS` characters replaced by a note
(`"[number 1E+1000000]"`: written out, 10^1000000 is a megabyte of zeros,
and an integer past 4,300 digits cannot even be turned into text by Python),
anything nested deeper than `DEPTH_LIMIT` levels replaced by a note, and an
output whose JSON is still longer than `OUTPUT_LIMIT` replaced by a note.
Deterministic: the same stored value gives the same text on every run.

`display_number` is how every renderer writes a number: exact when short,
else 17 significant digits in scientific form, never by formatting the
whole number. `render_json` writes a report or a comparison as JSON text
with every character `_visible` calls unsafe as a JSON escape (the same
value to a parser, and no bidi control or lone surrogate in the text).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Iterator
from datetime import datetime
from decimal import MAX_EMAX, MIN_EMIN, Context, Decimal, Inexact
from typing import Any

from evals._visible import UNSAFE
from records import utc_text
from schema.jsontext import decimal_text, dumps

__all__ = [
    "DEPTH_LIMIT",
    "NUMBER_CHARS",
    "OUTPUT_LIMIT",
    "STRING_HEAD",
    "STRING_LIMIT",
    "bounded",
    "bounded_text",
    "display_number",
    "json_chunks",
    "render_json",
    "shows_a_cut",
    "text_of",
    "timestamp",
]

STRING_LIMIT = 600
STRING_HEAD = 200
KEY_LIMIT = 100
OUTPUT_LIMIT = 20_000
NUMBER_CHARS = 100
SIGNIFICANT = 17
EXACT_DIGITS = 80  # a Decimal of this many digits or fewer is written exactly
# The executor's reader refuses deeper JSON (docs/agents.md), so whatever it
# accepted shows in full; only a value stored some other way is cut.
DEPTH_LIMIT = 64
# Past this many bits an integer is not converted to a Decimal whole (the
# conversion grows faster than linearly); its leading digits are divided out.
_WHOLE_BITS = 100_000
_LOG10_2 = math.log10(2)


def _rounding(digits: int = SIGNIFICANT) -> Context:
    """Rounds to `digits` digits whatever the exponent, and never raises.

    A new one per use: a context's flags are state, and reports render on
    several threads at once.
    """
    return Context(prec=digits, Emax=MAX_EMAX, Emin=MIN_EMIN, traps=[])


# The notes `bounded` writes in place of what it cuts (`shows_a_cut` finds them).
CUT_NOTE = " characters in all, sha256 "
OMITTED_NOTE = " characters of JSON omitted, sha256 "
_NOTE_HEADS = ("[number ", "[object nested deeper", "[array nested deeper", "[not JSON: ")


def shows_a_cut(value: Any) -> bool:
    """Whether a value, as a report carries it, holds a note of `bounded` in place of
    something it cut: then it is not the value that was graded (evals._import)."""
    if isinstance(value, str):
        return CUT_NOTE in value or OMITTED_NOTE in value or value.startswith(_NOTE_HEADS)
    if isinstance(value, dict):
        return any(shows_a_cut(k) or shows_a_cut(v) for k, v in value.items())
    if isinstance(value, list):
        return any(shows_a_cut(v) for v in value)
    return False


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def bounded_text(text: str, limit: int = STRING_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:STRING_HEAD]}… [{len(text)}{CUT_NOTE}{_sha(text)[:16]}]"


# -- numbers ------------------------------------------------------------------------------


def _decimal_chars(number: Decimal) -> int:
    """The length of `decimal_text(number)` for a finite Decimal, without writing it.

    `as_tuple` costs a step per digit (13 ms for a million: no more than
    reading the number did), so it is called once per number, and only when
    the exponent of its leading digit (`adjusted`, free) left it in doubt.
    """
    sign = 1 if number.is_signed() else 0
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)  # finite
    if number.is_zero():
        return sign + (1 if exponent >= 0 else 2 - exponent)
    whole = number.adjusted() + 1  # digits before the point
    if exponent >= 0:
        return sign + whole
    return sign + max(whole, 1) + 1 - exponent


def _short(number: int | Decimal | float) -> bool:
    """Whether the number is a JSON number of at most NUMBER_CHARS characters."""
    if isinstance(number, float):
        return math.isfinite(number)
    if isinstance(number, int):
        # 400 bits are at most 121 digits: far below Python's limit on int-to-text.
        return number.bit_length() <= 400 and len(int.__repr__(number)) <= NUMBER_CHARS
    if not number.is_finite() or abs(number.adjusted()) > NUMBER_CHARS:
        return False  # written out, more than NUMBER_CHARS digits or zeros
    return _decimal_chars(number) <= NUMBER_CHARS


def _scientific(number: Decimal, exact: bool = True) -> str:
    """`number` to SIGNIFICANT digits, `≈` in front when that rounded it."""
    context = _rounding()
    shown = context.plus(number).normalize(context)
    approximate = not exact or bool(context.flags[Inexact])
    return ("≈" if approximate else "") + str(shown)


def _huge_int(number: int) -> str:
    if number.bit_length() <= _WHOLE_BITS:
        return _scientific(Decimal(number))
    # Keep about SIGNIFICANT + 3 leading digits: 10**shift costs far less than
    # converting every digit, and the quotient is small.
    shift = int((number.bit_length() - 1) * _LOG10_2) - SIGNIFICANT - 3
    head = abs(number) // 10**shift
    return _scientific(Decimal(head if number > 0 else -head).scaleb(shift, _rounding()), False)


def display_number(number: int | Decimal | float) -> str:
    """A number as reports write it: its JSON text when short, else scientific, bounded.

    Never formats a long number whole: `Decimal("1E+1000000")` is
    `1E+1000000`, a 5,000-digit integer `≈1.2345678901234568E+4999`, NaN and
    infinities as Decimal spells them. At most NUMBER_CHARS + 5 characters
    (80 digits, a sign, a point, `E+` and a Decimal exponent's 19 digits).
    """
    if isinstance(number, bool):
        return "true" if number else "false"
    if isinstance(number, float):
        return float.__repr__(number)
    if isinstance(number, int):
        return int.__repr__(number) if _short(number) else _huge_int(number)
    if not number.is_finite():
        return str(number)
    if _short(number):
        return decimal_text(number)
    # Few digits and a far exponent (1E+1000000) are short and exact in
    # scientific form: the digits, a point, `E`, the exponent's sign and digits.
    context = _rounding(EXACT_DIGITS)
    shown = context.plus(number)
    if context.flags[Inexact]:
        return _scientific(number)
    return str(shown.normalize(context))


# -- JSON-shaped values ---------------------------------------------------------------------


def _key(key: Any) -> str:
    return bounded_text(key if isinstance(key, str) else text_of(key), KEY_LIMIT)


def _walk(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return bounded_text(value)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int | Decimal | float):
        return value if _short(value) else f"[number {display_number(value)}]"
    if isinstance(value, dict | list | tuple):
        if depth >= DEPTH_LIMIT:
            kind = "object" if isinstance(value, dict) else "array"
            return f"[{kind} nested deeper than {DEPTH_LIMIT} levels]"
        if isinstance(value, dict):
            return {_key(k): _walk(v, depth + 1) for k, v in value.items()}
        return [_walk(v, depth + 1) for v in value]
    return f"[not JSON: {type(value).__name__}]"


def bounded(value: Any, limit: int | None = OUTPUT_LIMIT) -> Any:
    """`value` cut as the module docstring says; JSON-shaped in and out, and never raises.

    `limit=None` cuts strings, numbers and depth but keeps the value however
    long its JSON (the record: holon's own, as long as the plan).
    """
    out = _walk(value, 0)
    if limit is None:
        return out
    text = dumps(out)
    if len(text) > limit:
        return f"[output of {len(text)}{OMITTED_NOTE}{_sha(text)[:16]}]"
    return out


def text_of(value: Any, limit: int = STRING_LIMIT) -> str:
    """Any stored value as one bounded line of text: a string itself, anything else its JSON."""
    if isinstance(value, str):
        return bounded_text(value, limit)
    if isinstance(value, int | Decimal | float):
        return display_number(value)
    shown = bounded(value)
    return bounded_text(shown if isinstance(shown, str) else dumps(shown), limit)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON spells a code point past the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def render_json(document: Any) -> str:
    """A report or comparison as JSON text (ends with a newline); unsafe characters escaped.

    The document is bounded already; outside string literals JSON text is
    ASCII, so every unsafe character found is inside one and its `\\uXXXX`
    escape means the same string. A lone surrogate, which UTF-8 cannot
    encode, becomes its escape too: the text can always be written out.
    """
    return "".join(json_chunks(document))


def json_chunks(document: Any) -> Iterator[str]:
    """`render_json`'s text in pieces that end between JSON tokens: a report whose case
    rows are made as they are iterated (evals.reports._model.CaseRows) is written a case
    at a time, never whole."""
    for piece in _json_pieces(document):
        if UNSAFE.search(piece) is not None:
            piece = UNSAFE.sub(lambda m: "".join(_json_escape(c) for c in m.group()), piece)
        yield piece
    yield "\n"


def _json_pieces(document: Any) -> Iterator[str]:
    suites = document.get("suites") if isinstance(document, dict) else None
    if not isinstance(suites, list) or all(
        not isinstance(s, dict) or isinstance(s.get("cases"), list) for s in suites
    ):
        yield dumps(document)  # whole: nothing in it is made as it is read
        return
    yield from _json_object(document, "suites")


def _json_object(value: dict[str, Any], streamed: str) -> Iterator[str]:
    """`dumps(value)` in pieces, the member named `streamed` item by item: the report's
    `suites`, and in each suite its `cases`."""
    yield "{"
    for n, (key, member) in enumerate(value.items()):
        yield ("," if n else "") + dumps(key) + ":"
        if key != streamed or isinstance(member, str | dict) or not isinstance(member, Iterable):
            yield dumps(member)
            continue
        yield "["
        for i, item in enumerate(member):
            if i:
                yield ","
            if streamed == "suites" and isinstance(item, dict):
                yield from _json_object(item, "cases")
            else:
                yield dumps(item)
        yield "]"
    yield "}"


def timestamp(value: datetime | None) -> str | None:
    """RFC 3339 in UTC with a `Z`, to the second (as the CLI shows times)."""
    return None if value is None else utc_text(value)
