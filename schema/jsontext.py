"""JSON text in and out, with exact numbers of bounded size.

Inside holon a JSON number is an `int` or a `Decimal` of its text, never a
float, so `1234.50` compares as written and money never drifts. `dumps`
writes Decimals back as JSON numbers (never strings), `loads` reads them so.
Floats from foreign code are accepted on the way out and written with
`repr`, which round-trips.

Numbers are bounded both ways (`schema.numbers`): `dumps` never expands one
(`1E+400` stays `1E+400`), and `loads` refuses, with a `NumberError` naming
the JSON path, a number of more than 1000 significant digits or with an
exponent beyond ±4000. The check costs one linear scan of the text at C
speed: only a text with a run of more than 1000 digits or an exponent of
four digits or more is read with per-number checks. Texts over 64 KiB are always
read with those checks, which are Python code, so a thread reading one lets
the event loop run between numbers (a plain C parse would hold the GIL for
all of it).
"""

from __future__ import annotations

import itertools
import json
import math
import threading
from decimal import Decimal
from typing import Any, Final, NoReturn, cast

from schema.numbers import (
    MAX_NUMBER_DIGITS,
    MAX_NUMBER_EXPONENT,
    MAX_NUMBER_GROWTH,
    decimal_text,
    read_number,
)

__all__ = [
    "LARGE_NODES",
    "JSONObject",
    "JSONValue",
    "NumberError",
    "PathKey",
    "count_nodes",
    "decimal_text",
    "dumps",
    "format_path",
    "loads",
    "max_depth",
    "size_bound",
]

JSONValue = Any  # dict[str, JSONValue] | list[JSONValue] | str | int | Decimal | bool | None
JSONObject = dict[str, Any]  # a JSON object as holon reads and writes it (a body, a view)
PathKey = tuple[str | int, ...]

_encode_str = json.encoder.encode_basestring
_encode_str_ascii = json.encoder.encode_basestring_ascii

# A number past the limits has a run of more than MAX_NUMBER_DIGITS digits
# and points, or an exponent of four digits or more; a text with neither
# holds only numbers within them (a run of at most 1000 characters moves the
# leading digit at most 999 places, an exponent of three digits 999 more).
# To look for them, the text's bytes are mapped to four classes (digit or
# point, e, sign, anything else) and searched for fixed strings: C speed,
# linear, a microsecond for a small body (a regex engine's call costs more).
assert MAX_NUMBER_EXPONENT >= 2 * (MAX_NUMBER_DIGITS - 1) + 1
_CLASSES: Final = bytes(
    ord("0")
    if chr(byte) in "0123456789."
    else ord("e")
    if chr(byte) in "eE"
    else ord("+")
    if chr(byte) in "+-"
    else ord(" ")
    for byte in range(256)
)
_LONG_RUN: Final = b"0" * (MAX_NUMBER_DIGITS + 1)


def _suspect(utf8: bytes) -> bool:
    """Whether the text may hold a number past the limits (false alarms only cost time)."""
    classes = utf8.translate(_CLASSES)
    return (
        b"e0000" in classes
        or b"e+0000" in classes
        or (len(classes) > MAX_NUMBER_DIGITS and _LONG_RUN in classes)
    )


_PLAIN_MAX_CHARS: Final = 64 * 1024

LARGE_NODES: Final = 2048
"""A value with more nodes (`count_nodes`) takes over a millisecond to write or walk:
code on an event loop does that in a worker thread."""


class NumberError(ValueError):
    """A number beyond the limits: `path` is where it is, `problem` what is wrong with it."""

    def __init__(self, path: PathKey, problem: str) -> None:
        super().__init__(f"{format_path(path)}: {problem}")
        self.path = path
        self.problem = problem


def format_path(path: PathKey) -> str:
    """`("limits", "timeout_s")` -> `$.limits.timeout_s`; indexes as `[0]`."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier():
            out += f".{part}"
        else:
            escaped = part.replace("\\", "\\\\").replace("'", "\\'")
            # A key from untrusted JSON may hold a lone surrogate, and a path goes
            # into error messages, which must be text: shown as its escape.
            escaped = escaped.encode("utf-8", "backslashreplace").decode("utf-8")
            out += f"['{escaped}']"
    return out


def size_bound(text: str | bytes) -> int:
    """At least the size of any value read from the JSON `text` once `dumps` writes it
    (in characters of a str, bytes of bytes).

    Its strings are written no longer than they were read (an escape never
    stands for a longer one) and its numbers at most MAX_NUMBER_GROWTH characters
    longer each, only if written with an exponent (so with an `e` or `E`):
    counting those is enough for almost every document, with no writing.
    """
    if isinstance(text, bytes):
        return len(text) + MAX_NUMBER_GROWTH * (text.count(b"e") + text.count(b"E"))
    return len(text) + MAX_NUMBER_GROWTH * (text.count("e") + text.count("E"))


def dumps(value: JSONValue, *, sort_keys: bool = False, ensure_ascii: bool = False) -> str:
    """Compact JSON text (no spaces), Decimal-exact. Raises ValueError on NaN/Infinity."""
    # The C encoder first: it stops at the first Decimal (which it cannot
    # write exactly), so a value without one costs no walk of its own, and
    # one with a Decimal costs the C encoder's partial pass plus the writer.
    try:
        return _ENCODERS[sort_keys, ensure_ascii].encode(value)
    except _NotPlain:
        pass
    marked = _marked(value, sort_keys, ensure_ascii)
    if marked is not None:
        return marked
    out: list[str] = []
    _write(value, out, sort_keys, _encode_str_ascii if ensure_ascii else _encode_str)
    return "".join(out)


# A Decimal's place in the C encoder's output: the string "\x00", which it writes as
# `"\u0000"` (it escapes every control character, with or without ensure_ascii).
_MARK = '"\\u0000"'


def _marked(value: JSONValue, sort_keys: bool, ensure_ascii: bool) -> str | None:
    """`value` (holding Decimals) written by the C encoder, each Decimal as a mark that
    is then replaced by its exact text; None when a string of the value's own reads as
    a mark, for the exact writer to do it all.

    A Decimal's mark stands alone between structural characters, so each makes exactly
    one match, in the order the encoder met them: finding exactly as many matches as
    Decimals proves that no string of the value made one (a collision is detected,
    never trusted). A value of many Decimals among many strings (a report) then costs
    the C encoder's pass, a Python call per Decimal and one split, not a call per node.
    """
    texts: list[str] = []

    def mark(item: Any) -> str:
        if isinstance(item, Decimal):
            texts.append(decimal_text(item))
            return "\x00"
        raise TypeError(f"{type(item).__name__} is not JSON")

    pieces = _encoder(sort_keys, ensure_ascii, mark).encode(value).split(_MARK)
    if len(pieces) != len(texts) + 1:
        return None
    texts.append("")
    return "".join(itertools.chain.from_iterable(zip(pieces, texts, strict=True)))


class _NotPlain(Exception):
    """A Decimal (or a foreign type) met by the C encoder: the exact writer takes over."""


def _not_plain(value: Any) -> NoReturn:
    raise _NotPlain


def _encoder(sort_keys: bool, ensure_ascii: bool, default: Any) -> json.JSONEncoder:
    """The C encoder, compact, refusing NaN, calling `default` for what it cannot write."""
    return json.JSONEncoder(
        separators=(",", ":"),
        sort_keys=sort_keys,
        ensure_ascii=ensure_ascii,
        allow_nan=False,
        # A JSON value built from parsed JSON or by holon is never circular; the
        # check's bookkeeping (every container's id in a dict) was a quarter of
        # the encoding time of an eval cell's result (a circular value would
        # raise RecursionError instead of ValueError).
        check_circular=False,
        default=default,
    )


# Built once (json.dumps with options builds an encoder per call).
_ENCODERS = {
    (sort_keys, ensure_ascii): _encoder(sort_keys, ensure_ascii, _not_plain)
    for sort_keys in (False, True)
    for ensure_ascii in (False, True)
}


def _write(value: Any, out: list[str], sort_keys: bool, enc: Any) -> None:
    if isinstance(value, str):
        out.append(enc(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, Decimal):
        out.append(decimal_text(value))
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a finite JSON number")
        out.append(float.__repr__(value))
    elif isinstance(value, dict):
        out.append("{")
        items = sorted(value.items()) if sort_keys else value.items()
        first = True
        for key, item in items:
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {type(key).__name__}")
            if not first:
                out.append(",")
            first = False
            out.append(enc(key))
            out.append(":")
            _write(item, out, sort_keys, enc)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _write(item, out, sort_keys, enc)
        out.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON")


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# One decoder for every call: json.loads with options builds a new one each time.
_DECODER = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)


class _Refused:
    """Stands in for a refused number while the text is read, so its path can be found."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem
        _READING.refused = True


class _Reading(threading.local):
    refused = False  # whether the text being read on this thread had a number refused


_READING = _Reading()


def _checked_float(text: str) -> Decimal | _Refused:
    number = read_number(text, integral=False)
    if isinstance(number, str):
        return _Refused(number)
    return cast(Decimal, number)


def _checked_int(text: str) -> int | _Refused:
    # Only the length can be wrong: JSON integers are digits with an optional minus.
    if len(text) - (text[0] == "-") > MAX_NUMBER_DIGITS:
        return _Refused(str(read_number(text, integral=True)))
    return int(text)


_CHECKING = json.JSONDecoder(
    parse_float=_checked_float, parse_int=_checked_int, parse_constant=_reject_constant
)


def loads(text: str | bytes, *, bounded: bool = True) -> JSONValue:
    """Parse JSON; non-integral numbers become Decimal; NaN/Infinity are refused.

    Raises ValueError (json.JSONDecodeError is one) on bad text, `NumberError`
    (a ValueError) on a number beyond the limits of `schema.numbers`, and
    RecursionError on absurd nesting (callers bound depth with `max_depth`).
    `bounded=False` reads numbers of any size: for what holon wrote itself
    (the store's JSON columns), so a row written before the limits stays
    readable.
    """
    utf8: bytes | None = None
    if isinstance(text, bytes | bytearray):
        # As json.loads does: UTF-8, -16 or -32, detected from the first bytes.
        encoding = json.detect_encoding(text)
        utf8 = bytes(text) if encoding in ("utf-8", "utf-8-sig") else None
        text = text.decode(encoding, "surrogatepass")
    if not bounded:
        return _DECODER.decode(text)
    if len(text) <= _PLAIN_MAX_CHARS:
        # Scanned as UTF-8 (a lone surrogate, which callers refuse later with a
        # clearer message, must not stop the scan).
        probe = utf8 if utf8 is not None else text.encode("utf-8", "surrogatepass")
        if not _suspect(probe):
            return _DECODER.decode(text)
    _READING.refused = False
    value = _CHECKING.decode(text)
    if _READING.refused:
        where = _refused_at(value)
        if where is not None:  # else a duplicate key dropped the refused number
            raise NumberError(*where)
    return value


def _refused_at(value: Any) -> tuple[PathKey, str] | None:
    """The path and problem of the first refused number, in document order."""
    stack: list[tuple[Any, PathKey]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, _Refused):
            return path, item.problem
        if isinstance(item, dict):
            stack.extend((child, (*path, key)) for key, child in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((item[i], (*path, i)) for i in range(len(item) - 1, -1, -1))
    return None


def count_nodes(value: JSONValue, limit: int) -> int:
    """How many values `value` holds (itself included), counting no further than `limit + 1`.

    What writing or walking a value costs grows with this count (a long
    string costs little more than a short one): callers move big values off
    the event loop by it.
    """
    kind = type(value)
    if kind is not dict and kind is not list:
        return 1
    count = 1
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        children = item.values() if type(item) is dict else item
        count += len(children)
        if count > limit:
            return limit + 1
        stack.extend(c for c in children if type(c) is dict or type(c) is list)
    return count


def max_depth(value: JSONValue, limit: int) -> int:
    """Nesting depth of a parsed value (a scalar is 0), counting no further than `limit + 1`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children if isinstance(child, dict | list))
    return deepest
