"""Read the values printed on invoices: amounts, dates, currencies.

The invoice reader's vocabulary, kept apart from its layout logic. Amounts
come as ``1,234.50``, ``1.234,50``, ``1 234,50``, ``1'234.50``, with a
currency symbol or code before or after, negative as ``-50.00``, ``50.00-``
or ``(50.00)``. Dates come as ISO, day-first or month-first numbers, or with
month names. Which separator is decimal and which day/month order slashes
use is decided once per document (`NumberStyle`, `DateOrder`), because one
``05/03/2026`` or ``1,234`` alone cannot tell.

Patterns are RE2 (linear time): the text comes from callers' PDFs.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

import re2

__all__ = [
    "CURRENCY_CODES",
    "DateOrder",
    "NumberStyle",
    "detect_currency",
    "detect_date_order",
    "detect_number_style",
    "find_dates",
    "parse_amount",
    "parse_date",
]

CURRENCY_CODES = frozenset(
    [
        *"EUR USD GBP CHF JPY CAD AUD NZD SEK NOK DKK PLN".split(),
        *"CZK HUF RON BGN INR CNY ZAR SGD HKD MXN BRL".split(),
    ]
)
# Longest first, so "US$" wins over "$".
_SYMBOLS = [
    ("US$", "USD"),
    ("CA$", "CAD"),
    ("C$", "CAD"),
    ("AU$", "AUD"),
    ("A$", "AUD"),
    ("NZ$", "NZD"),
    ("\u20ac", "EUR"),
    ("\u00a3", "GBP"),
    ("\u00a5", "JPY"),
    ("$", "USD"),
]
_SYMBOL_CHARS = "$\u20ac\u00a3\u00a5"

# A money-looking token whose last separator is followed by exactly two digits.
_DECIMAL_TOKEN = re2.compile(r"\d(?:[\d.,'\x{a0} ]*\d)?([.,])\d{2}(?:[^\d]|$)")
_CODE_WORD = re2.compile(r"\b([A-Z]{3})\b")
# A unit after a quantity: "3 pcs", "2.5 h", "12 order", "4 m2", "6 x".
_UNIT_SUFFIX = re2.compile(r"(?i)\s+(?:[a-z]{1,12}\.?|m[23\x{b2}\x{b3}])$|(?i)\s*x$")
_NUMBER_BODY = re2.compile(r"^\d{1,3}(?:[.,'\x{a0} ]\d{3})*(?:[.,]\d+)?$|^\d+(?:[.,]\d+)?$")

MONTHS = {
    name: index + 1
    for index, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ]
    )
    for name in names
}
_MONTH = (
    r"(january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|mar|apr|jun|jul|aug|sept|sep|oct|nov|dec)\.?"
)
_DATE_PATTERNS = [
    ("ymd", re2.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b")),
    ("num", re2.compile(r"\b(\d{1,2})([/.-])(\d{1,2})[/.-](\d{4})\b")),
    ("dmy_name", re2.compile(r"(?i)\b(\d{1,2})(?:st|nd|rd|th)?[ -]" + _MONTH + r"[-, ]*(\d{4})\b")),
    ("mdy_name", re2.compile(r"(?i)\b" + _MONTH + r" (\d{1,2})(?:st|nd|rd|th)?,? (\d{4})\b")),
]


@dataclass(frozen=True)
class NumberStyle:
    """Whether a document writes decimals with a comma (1.234,50) or a point (1,234.50)."""

    decimal_comma: bool = False


@dataclass(frozen=True)
class DateOrder:
    """Whether all-numeric dates with slashes put the day first (05/03 = 5 March)."""

    day_first: bool = True


def detect_number_style(text: str) -> NumberStyle:
    """Vote over every amount with two decimals: which separator precedes them."""
    votes = Counter(match.group(1) for match in _DECIMAL_TOKEN.finditer(text))
    return NumberStyle(decimal_comma=votes[","] > votes["."])


def strip_currency(text: str) -> tuple[str, str | None]:
    """The text without a leading or trailing currency symbol or code, and that currency."""
    value = text.strip()
    for symbol, code in _SYMBOLS:
        if value.startswith(symbol):
            return value[len(symbol) :].strip(), code
        if value.endswith(symbol):
            return value[: -len(symbol)].strip(), code
    if len(value) > 3 and value[:3].isupper() and value[:3] in CURRENCY_CODES:
        return value[3:].strip(), value[:3]
    if len(value) > 3 and value[-3:].isupper() and value[-3:] in CURRENCY_CODES:
        return value[:-3].strip(), value[-3:]
    return value, None


def parse_amount(text: str, style: NumberStyle, *, allow_unit: bool = False) -> Decimal | None:
    """The number a cell shows, or None when the cell is not (only) a number.

    `allow_unit` accepts a trailing unit word such as "3 pcs", "2.5 h" or "12 order"
    (quantities).
    """
    value = text.strip()
    negative = False
    if value.startswith("(") and value.endswith(")"):
        negative, value = True, value[1:-1].strip()
    if value.endswith("-") and not value.endswith("--"):
        negative, value = True, value[:-1].strip()
    if value.startswith(("-", "\u2212")):
        negative, value = True, value[1:].strip()
    value, _ = strip_currency(value)
    if value.startswith(("-", "\u2212")):  # "€-50.00"
        negative, value = True, value[1:].strip()
    if allow_unit:
        value = _UNIT_SUFFIX.sub("", value)
    if not value or not _NUMBER_BODY.match(value):
        return None
    if style.decimal_comma:
        value = value.replace(".", "").replace(",", ".")
    else:
        value = value.replace(",", "")
    value = value.replace("'", "").replace("\u00a0", "").replace(" ", "")
    if value.count(".") > 1:
        return None
    try:
        number = Decimal(value)
    except InvalidOperation:
        return None
    return -number if negative else number


def _valid(year: int, month: int, day: int) -> dt.date | None:
    try:
        return dt.date(year, month, day)
    except ValueError:
        return None


def detect_date_order(text: str, default_day_first: bool) -> DateOrder:
    """Day-first unless a numeric slash date proves otherwise (or the default says so).

    A part over 12 settles it; dotted dates (05.03.2026) are always day-first.
    """
    day_first = month_first = 0
    for match in _DATE_PATTERNS[1][1].finditer(text):
        first, separator, second = int(match.group(1)), match.group(2), int(match.group(3))
        if separator == "." or first > 12 >= second:
            day_first += 1
        elif second > 12 >= first:
            month_first += 1
    if day_first != month_first:
        return DateOrder(day_first=day_first > month_first)
    return DateOrder(day_first=default_day_first)


def find_dates(text: str, order: DateOrder) -> list[tuple[int, dt.date]]:
    """Every date in `text` with its offset, in reading order."""
    found: list[tuple[int, dt.date]] = []
    for kind, pattern in _DATE_PATTERNS:
        for match in pattern.finditer(text):
            parsed = _from_match(kind, match.groups(), order)
            if parsed is not None:
                found.append((match.start(), parsed))
    found.sort(key=lambda item: item[0])
    return found


def parse_date(text: str, order: DateOrder) -> dt.date | None:
    """The first date in `text`, or None."""
    dates = find_dates(text, order)
    return dates[0][1] if dates else None


def _from_match(kind: str, groups: tuple[str, ...], order: DateOrder) -> dt.date | None:
    if kind == "ymd":
        return _valid(int(groups[0]), int(groups[1]), int(groups[2]))
    if kind == "num":
        first, separator, second, year = int(groups[0]), groups[1], int(groups[2]), int(groups[3])
        day_first = order.day_first or separator == "."
        if day_first:
            return _valid(year, second, first) or _valid(year, first, second)
        return _valid(year, first, second) or _valid(year, second, first)
    if kind == "dmy_name":
        return _valid(int(groups[2]), MONTHS[groups[1].lower()], int(groups[0]))
    return _valid(int(groups[2]), MONTHS[groups[0].lower()], int(groups[1]))


def detect_currency(text: str, label_value: str | None, style: NumberStyle) -> str:
    """The invoice currency: a 'Currency:' label, else the commonest code, else symbols.

    With no evidence at all, a guess from the number style (comma decimals:
    EUR, else USD); it is a guess, and graded as one.
    """
    if label_value:
        match = _CODE_WORD.search(label_value.upper())
        if match and match.group(1) in CURRENCY_CODES:
            return str(match.group(1))
        _, code = strip_currency(label_value + " 0")
        if code:
            return code
    codes = Counter(m.group(1) for m in _CODE_WORD.finditer(text) if m.group(1) in CURRENCY_CODES)
    if codes:
        return str(codes.most_common(1)[0][0])
    symbols: Counter[str] = Counter()
    for index, char in enumerate(text):
        if char not in _SYMBOL_CHARS:
            continue
        head = text[max(0, index - 2) : index + 1]
        for symbol, code in _SYMBOLS:
            if head.endswith(symbol):
                symbols[code] += 1
                break
    if symbols:
        return symbols.most_common(1)[0][0]
    return "EUR" if style.decimal_comma else "USD"
