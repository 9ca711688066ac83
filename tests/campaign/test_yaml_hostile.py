"""Hostile YAML, one named input at a time: what the fuzzers found, kept as regressions.

Before this campaign each of these escaped `parse_document` as a parser
exception (RecursionError, TypeError, KeyError, ValueError) or hung; now each
is an `InputError` naming file:line:col, or loads as the plain data it is.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from schema.documents import load_document, parse_document
from schema.errors import InputError
from tests.campaign._tally import record

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 10)}]\n"
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
)

# text -> (line, column, words in the message)
REFUSED: dict[str, tuple[int, int, str]] = {
    "a: !!python/object/apply:os.system ['id']": (1, 4, "tag !!python/object/apply:os.system"),
    "a: !custom x": (1, 4, "tag !custom is not supported"),
    "a: !custom {b: 1}": (1, 4, "tag !custom is not supported"),
    "a: !!binary aGVsbG8=": (1, 4, "tag !!binary"),
    "a: !!set {x, y}": (1, 4, "tag !!set"),
    "a: !!omap [{a: 1}]": (1, 4, "tag !!omap"),
    "a: 1\nb: !!int x": (2, 4, "not a valid value"),
    "a: 1\nb: !!bool maybe": (2, 4, "not a valid value"),
    "a: " + "9" * 5000: (1, 4, "more digits than a number may have"),
    "&a [*a, *a]": (1, 1, "alias refers to a collection that contains it"),
    LAUGHS: (1, 35, "YAML aliases expand this document to more than"),
    "a: " + "[" * 100 + "]" * 100: (1, 67, "nested more than 64 levels deep"),
    "- " * 3000 + "x": (1, 129, "nested more than 64 levels deep"),
    "[" * 20_000: (1, 65, "nested more than 64 levels deep"),
    "? {a: [1]}\n: 2": (1, 3, "keys must be strings, got a mapping"),
    "? [1, [2]]\n: 2": (1, 3, "keys must be strings, got a list"),
    'a: 1\nb: "\\ud800"': (2, 1, "lone UTF-16 surrogate"),
    'a: 1\n"\\udfff": 2': (2, 1, "lone UTF-16 surrogate"),  # a key
    "a: 1\nb: x\x00": (2, 5, "U+0000 is not allowed"),
    "a: 1\na: 2": (2, 1, "duplicate key"),
    "a: .nan": (1, 4, "not a finite number"),
}


@pytest.mark.parametrize("text", list(REFUSED), ids=lambda t: repr(t[:30]))
def test_hostile_yaml_is_an_input_error_with_a_position(text: str) -> None:
    line, column, words = REFUSED[text]
    with pytest.raises(InputError) as caught:
        parse_document(text, "doc.yaml")
    error = caught.value
    assert words in error.message, str(error)
    assert (error.location.file, error.location.line) == ("doc.yaml", line), str(error)
    assert error.location.column == column, str(error)
    record("hostile YAML (named)", "refused")


def test_plain_data_written_the_long_way_still_loads() -> None:
    text = "base: &base {b: 1, c: 2}\nmerged:\n  <<: *base\n  c: 3\ns: !!str 1\nm: !!map {x: 1}\n"
    assert parse_document(text).value == {
        "base": {"b": 1, "c": 2},
        "merged": {"c": 3, "b": 1},
        "s": "1",
        "m": {"x": 1},
    }
    ok = "a: " + "[" * 60 + "]" * 60  # deep, but within the bound
    assert parse_document(ok).value["a"] is not None
    record("hostile YAML (named)", "loaded")


def test_bytes_that_are_not_utf8_name_their_line(tmp_path: Path) -> None:
    file = tmp_path / "doc.yaml"
    file.write_bytes(b"a: 1\nb: 2\nc: caf\xe9\n")
    with pytest.raises(InputError) as caught:
        load_document(file)
    assert (caught.value.location.line, caught.value.location.column) == (3, 7)
    assert "not UTF-8 text (byte 16: b'\\xe9')" in caught.value.message
    record("hostile YAML (named)", "refused")


def test_a_device_or_a_pipe_is_read_no_further_than_the_cap(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="more than the 1048576 bytes read"):
        load_document("/dev/zero")
    pipe = tmp_path / "pipe"
    import os

    os.mkfifo(pipe)
    assert load_document(pipe).value is None  # nobody writes: empty, not a wait forever
    record("hostile YAML (named)", "refused")
