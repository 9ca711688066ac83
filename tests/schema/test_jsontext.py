"""Exact JSON numbers in and out."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schema import jsontext
from schema.jsontext import NumberError, count_nodes, dumps, loads, max_depth, size_bound


def test_decimals_keep_their_text() -> None:
    value = loads('{"total": 1234.50, "n": 3, "tiny": 1e-7}')
    assert value == {"total": Decimal("1234.50"), "n": 3, "tiny": Decimal("1e-7")}
    assert dumps(value) == '{"total":1234.50,"n":3,"tiny":0.0000001}'


def test_dumps_matches_json_without_decimals() -> None:
    value = {"b": [1, "é", None, True], "a": {"x": "\u2028"}}
    assert dumps(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    assert dumps(value, sort_keys=True).startswith('{"a"')


@pytest.mark.parametrize("text", ["NaN", "[Infinity]", '{"a": -Infinity}'])
def test_non_finite_numbers_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        loads(text)


def test_non_finite_decimals_cannot_be_written() -> None:
    with pytest.raises(ValueError):
        dumps({"a": Decimal("NaN")})
    with pytest.raises(ValueError):
        dumps([float("inf")])


def test_max_depth_stops_early() -> None:
    assert max_depth(1, 10) == 0
    assert max_depth({"a": [1, {"b": []}]}, 10) == 4
    deep: list[object] = []
    for _ in range(500):
        deep = [deep]
    assert max_depth(deep, 64) == 65


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**300), 10**300)
    | st.decimals(allow_nan=False, allow_infinity=False).filter(lambda d: abs(d.adjusted()) <= 4000)
    | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@given(json_values)
def test_round_trip_is_exact(value: object) -> None:
    text = dumps(value)
    assert loads(text) == value
    # Writing what was read gives the same text again: the format is stable.
    assert dumps(loads(text)) == dumps(loads(dumps(loads(text))))


@pytest.mark.parametrize(
    ("text", "path", "words"),
    [
        ('{"capability":"x","input":{"a":1E+2147483648,"b":2}}', ("input", "a"), "out of range"),
        ('{"output":{"sum":1e10000000}}', ("output", "sum"), "out of range"),
        ("[1e99999999999999999999999]", (0,), "out of range"),  # past Decimal's own range
        ("[0, 0e-99999]", (1,), "out of range"),
        ('{"a b": [1, {"c": ' + "9" * 5000 + "}]}", ("a b", 1, "c"), "5000 significant digits"),
        ("[" + "1" * 1001 + "]", (0,), "1001 significant digits"),
        ("[1." + "5" * 1000 + "]", (0,), "1001 significant digits"),
    ],
)
def test_numbers_past_the_limits_are_refused_at_their_path(
    text: str, path: tuple[object, ...], words: str
) -> None:
    with pytest.raises(NumberError) as caught:
        loads(text)
    assert caught.value.path == path
    assert words in caught.value.problem
    assert str(caught.value).startswith("$")
    with pytest.raises(NumberError):
        loads(text.encode("utf-16"))  # however the bytes are encoded


def test_numbers_at_the_limits_are_read_and_written_back_short() -> None:
    text = (
        '{"big":1E+4000,"small":-1E-4000,"long":' + "7" * 1000 + ',"zeros":0.' + "0" * 2000 + "1}"
    )
    value = loads(text)
    assert value["big"] == Decimal("1E+4000") and value["long"] == int("7" * 1000)
    assert (
        dumps(value) == '{"big":1E+4000,"small":-1E-4000,"long":' + "7" * 1000 + ',"zeros":1E-2001}'
    )


def test_a_long_text_is_checked_number_by_number() -> None:
    # Over 64 KiB every text goes through the per-number checks (in Python, so a
    # thread reading it lets the event loop run): the values are the same.
    value = {"items": [Decimal("1.5"), 12, "text e1234"] * 20_000}
    assert loads(dumps(value)) == value
    bad = dumps({"items": [1] * 30_000 + [Decimal("1E+5000")]})
    with pytest.raises(NumberError) as caught:
        loads(bad)
    assert caught.value.path == ("items", 30_000)


def test_a_refused_number_a_duplicate_key_dropped_is_no_refusal() -> None:
    assert loads('{"a": 1e99999, "a": 1}') == {"a": 1}


def test_unbounded_reading_keeps_old_rows_readable() -> None:
    # The store reads what holon wrote before the limits (a 2,000-digit integer).
    assert loads("[" + "9" * 2000 + "]", bounded=False) == [int("9" * 2000)]
    with pytest.raises(NumberError):
        loads("[" + "9" * 2000 + "]")


def test_count_nodes_stops_counting_early() -> None:
    assert count_nodes(1, 10) == 1
    assert count_nodes({"a": [1, 2, {"b": "x"}]}, 10) == 6
    assert count_nodes([0] * 1_000_000, 2048) == 2049
    assert count_nodes({"a": [[0] * 100] * 100}, 2048) == 2049


def test_a_lone_surrogate_does_not_stop_the_number_scan() -> None:
    # Callers refuse lone surrogates themselves, with a clearer message; the scan for
    # hostile numbers (RE2 reads UTF-8) must not fail on them first.
    assert loads(dumps(["\ud800", 1.5])) == ["\ud800", Decimal("1.5")]
    assert loads(b'["\xed\xa0\x80", 2]') == ["\ud800", 2]
    with pytest.raises(NumberError):
        loads('["\ud800", 1e99999]')


def test_a_path_with_a_lone_surrogate_key_is_text() -> None:
    """Paths go into error messages: a hostile key is shown as its escape, never raw."""
    from schema.jsontext import format_path

    shown = format_path(("input", "\ud800", 0))
    assert shown == "$.input['\\ud800'][0]"
    shown.encode("utf-8")  # text: no lone surrogate left


# Texts as an author or an agent writes them: exponents, escapes (short, \u, of
# characters dumps writes raw), spaces, non-ASCII characters raw.
_NUMBER_TEXTS = st.sampled_from(["1e5", "1E-7", "-2.5e+3", "0.000001", "12", "1e3999", "7.0"])
_STRING_TEXTS = st.sampled_from(['"a"', '"\\u00e9"', '"\\/"', '"\\n\\t"', '"\\u0022"', '"é€"'])
_texts = st.recursive(
    st.one_of(_NUMBER_TEXTS, _STRING_TEXTS, st.sampled_from(["true", "null"])),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4).map(lambda items: "[ " + " , ".join(items) + " ]"),
        st.lists(inner, max_size=4).map(
            lambda items: "{" + ",".join(f' "k{i}" : {v}' for i, v in enumerate(items)) + "}"
        ),
    ),
    max_leaves=12,
)


@given(_texts)
def test_size_bound_is_at_least_the_written_size(text: str) -> None:
    written = dumps(loads(text))
    assert size_bound(text) >= len(written)
    assert size_bound(text.encode()) >= len(written.encode())


# Strings that read as the marks the Decimal path writes (schema/jsontext.py `_marked`),
# mixed with real Decimals: the output must be the exact writer's all the same.
_mark_like = st.sampled_from(["\x00", "\x00\x00", '"\x00"', "a\x00", "\x00\\"])
_hostile = st.recursive(
    st.decimals(allow_nan=False, allow_infinity=False).filter(lambda d: abs(d.adjusted()) <= 50)
    | _mark_like
    | st.text(max_size=4)
    | st.integers(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(_mark_like | st.text(max_size=3), children, max_size=4)
    ),
    max_leaves=12,
)


@given(_hostile, st.booleans(), st.booleans())
def test_decimals_are_written_as_the_exact_writer_does(
    value: object, sort_keys: bool, ensure_ascii: bool
) -> None:
    out: list[str] = []
    encode = jsontext._encode_str_ascii if ensure_ascii else jsontext._encode_str
    jsontext._write(value, out, sort_keys, encode)
    assert dumps(value, sort_keys=sort_keys, ensure_ascii=ensure_ascii) == "".join(out)  # type: ignore[arg-type]


def test_a_string_that_reads_as_a_mark_is_written_as_a_string() -> None:
    # Two Decimals and a string that reads as a mark: written exactly all the same.
    value = {"a": Decimal("1.50"), "b": "\x00", "c": [Decimal("2E+1")]}
    assert dumps(value) == '{"a":1.50,"b":"\\u0000","c":[20]}'
    assert dumps(["\x00", Decimal("0.1")]) == '["\\u0000",0.1]'
    assert dumps(Decimal("7.50")) == "7.50"
    # The C encoder's path writes the first; the second falls back to the exact writer.
    assert jsontext._marked({"a": Decimal("1.50"), "b": "x"}, False, False) == '{"a":1.50,"b":"x"}'
    assert jsontext._marked(value, False, False) is None
