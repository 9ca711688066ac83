"""The pieces that make report rendering total: visible text, bounded numbers and values."""

from __future__ import annotations

import sys
import unicodedata
from decimal import Decimal
from typing import Any

import pytest

from evals._visible import UNSAFE, escape_char, visible, visible_runs
from evals.reports._html import attr, esc
from evals.reports._markdown import md, table
from evals.reports._values import (
    DEPTH_LIMIT,
    NUMBER_CHARS,
    bounded,
    display_number,
    render_json,
    text_of,
)
from schema.jsontext import loads

UNSAFE_CATEGORIES = {"Cc", "Cf", "Cs", "Zl", "Zp"}


def test_the_unsafe_class_is_exactly_its_unicode_categories() -> None:
    """Control (but tab and newline), format, surrogate, line and paragraph separators."""
    wrong = [
        code
        for code in range(sys.maxunicode + 1)
        if (UNSAFE.fullmatch(chr(code)) is not None)
        != (unicodedata.category(chr(code)) in UNSAFE_CATEGORIES and code not in (9, 10))
    ]
    assert wrong == [], [f"U+{c:04X} {unicodedata.category(chr(c))}" for c in wrong[:10]]
    # The ones the issue names, each of them.
    named = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    named += "\x00\x1b\x7f\x85\ufeff\u200b\u200c\u200d\u2028\u2029\ud800\udfff"
    assert all(UNSAFE.fullmatch(c) for c in named)
    assert not any(UNSAFE.search(c) for c in "\t\n aé€😀\u00a0\ue000")


def test_unsafe_characters_become_escapes_runs_kept_together() -> None:
    assert [escape_char(c) for c in "\x00\x7f\u202e\U000e0041\ud800"] == [
        "\\x00",
        "\\x7f",
        "\\u202e",
        "\\U000e0041",
        "\\ud800",
    ]
    assert list(visible_runs("a\u202e\u202db\x00")) == [
        ("a", False),
        ("\\u202e\\u202d", True),
        ("b", False),
        ("\\x00", True),
    ]
    assert list(visible_runs("")) == [("", False)]
    assert visible("invoice\u202etxt.exe") == "invoice\\u202etxt.exe"
    assert visible("plain\ttext\n") == "plain\ttext\n"


HUGE_INT = 7 * 10**5000 + 1  # past Python's 4,300-digit int-to-text limit


NUMBERS: list[tuple[Any, str]] = [
    (Decimal("1e1000000"), "1E+1000000"),
    (Decimal("1" + "0" * 1_000_000), "1E+1000000"),  # the same number, written out
    (Decimal("-2.5E-10000000"), "-2.5E-10000000"),
    (Decimal("0.7800"), "0.7800"),
    (Decimal("1E+2"), "100"),  # as the JSON writes it
    (Decimal("-0"), "-0"),
    (Decimal("NaN"), "NaN"),
    (Decimal("-Infinity"), "-Infinity"),
    (10**99, "1" + "0" * 99),
    (10**100, "1E+100"),
    (HUGE_INT, "≈7E+5000"),
    (-(3 ** (10**6)), "≈-1.7977101166757438E+477121"),  # 1.6 million bits
    # Up to 80 digits exact in scientific form, more rounded to 17.
    (Decimal("1234567890" * 4 + "E+900"), "1.23456789012345678901234567890123456789E+939"),
    (Decimal("1234567890" * 9 + "E+900"), "≈1.2345678901234568E+989"),
    (1.5, "1.5"),
    (True, "true"),
]


# Ids of their own: pytest would write a 5,000-digit int's id with str(), which raises.
@pytest.mark.parametrize(("number", "shown"), NUMBERS, ids=[shown for _, shown in NUMBERS])
def test_numbers_show_exact_when_short_and_bounded_always(number: Any, shown: str) -> None:
    assert display_number(number) == shown
    assert len(display_number(number)) <= NUMBER_CHARS + 5


def test_a_huge_int_is_shown_without_text_conversion() -> None:
    with pytest.raises(ValueError, match="4300"):
        str(HUGE_INT)  # what every report did before
    assert bounded({"n": HUGE_INT}) == {"n": "[number ≈7E+5000]"}
    assert text_of(HUGE_INT) == "≈7E+5000"


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def test_bounded_cuts_numbers_depth_and_foreign_types_and_is_idempotent() -> None:
    value = {
        "sum": Decimal("1e1000000"),
        "ok": Decimal("1.50"),
        "deep": _deep(100),
        "odd": {1, 2},
        "long": "x" * 10_000,
    }
    cut = bounded(value)
    assert cut["sum"] == "[number 1E+1000000]"
    assert cut["ok"] == Decimal("1.50")
    assert cut["odd"] == "[not JSON: set]"
    assert cut["long"].startswith("x" * 200 + "… [10000 characters in all, sha256 ")
    inner = cut["deep"]
    for _ in range(DEPTH_LIMIT - 1):
        inner = inner[0]
    assert inner == f"[array nested deeper than {DEPTH_LIMIT} levels]"
    assert bounded(cut) == cut


def test_json_text_keeps_the_data_and_shows_no_unsafe_character() -> None:
    value = {"a\u202e": ["\ud800", "\U000e0041\x7f\x85", "é€😀", "\u2028"], "n": Decimal("1.5")}
    written = render_json(value)
    assert written.endswith("\n")
    assert UNSAFE.search(written) is None
    written.encode("utf-8")  # a lone surrogate raw would not encode
    assert loads(written) == value
    assert '"\\ud800"' in written and "\\udb40\\udc41" in written and "é€😀" in written


def test_markdown_escapes_markup_and_keeps_tables_whole() -> None:
    assert md("[x](javascript:alert(1))") == "\\[x\\](javascript:alert(1))"
    assert md("# h") == "\\# h" and md("> q") == "&gt; q"
    assert md("<script>") == "&lt;script&gt;"
    assert md("&#x202e;") == "&amp;\\#x202e;"  # an entity shows as itself, never as U+202E
    assert md("a`b`") == "a\\`b\\`"
    assert md("a\nb\r\nc") == "a b\\x0d c"
    assert md("\u202eexe") == "\\u202eexe"
    assert md("agent_error") == "agent_error"
    row, _, cells = table(["a", "b"], [("x|y\\|z", "\u202e|")])
    assert cells == "| x\\|y\\\\\\|z | \\u202e\\| |"
    assert row == "| a | b |"


def test_html_marks_escapes_in_text_and_keeps_attributes_plain() -> None:
    assert esc("a\u202e\u202db<i>") == 'a<span class="esc">\\u202e\\u202d</span>b&lt;i&gt;'
    assert attr('"><script>\u202e') == "&quot;&gt;&lt;script&gt;\\u202e"
    assert esc(None) == "-" and esc(Decimal("1e1000000")) == "1E+1000000"
