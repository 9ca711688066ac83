"""The document loader: positions, exact numbers, strict YAML/JSON."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from schema import load_document, make_validator, parse_document, validate_document
from schema.errors import InputError


def test_numbers_are_int_or_decimal_never_float() -> None:
    doc = parse_document("a: 1\nb: 0.1\nc: [1.50, -2e3]\nd: 1_000\n")
    assert doc.value == {
        "a": 1,
        "b": Decimal("0.1"),
        "c": [Decimal("1.50"), Decimal("-2e3")],
        "d": 1000,
    }
    assert isinstance(doc.value["a"], int)
    assert str(doc.value["c"][0]) == "1.50"


@pytest.mark.parametrize("text", ["a: .nan\n", "a: .inf\n", "a: -.Inf\n"])
def test_non_finite_numbers_are_refused(text: str) -> None:
    with pytest.raises(InputError, match="not a finite number") as caught:
        parse_document(text, "f.yaml")
    assert str(caught.value).startswith("f.yaml:1:")


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("a: 1\nb: [2, 1e99999]\n", "f.yaml:2:8: $.b[1]", "out of range"),
        ("a:\n  b: " + "9" * 5000 + "\n", "f.yaml:2:6: $.a.b", "5000 significant digits"),
        ("a: -1.5E+2147483648\n", "f.yaml:1:4: $.a", "out of range"),
        ("a: 0e-99999\n", "f.yaml:1:4: $.a", "out of range"),
        ("a: 0x" + "f" * 900 + "\n", "f.yaml:1:1: $.a", "about 1084 digits"),
        ('{"x": {"y": [0, 1E+2147483648]}}', "f.yaml:1:17: $.x.y[1]", "out of range"),
        ("? " + "9" * 2000 + "\n: 1\n", "f.yaml:1:3", "2000 significant digits"),
    ],
)
def test_numbers_past_the_limits_are_refused_where_they_are(
    text: str, where: str, words: str
) -> None:
    with pytest.raises(InputError) as caught:
        parse_document(text, "f.yaml")
    assert str(caught.value).startswith(where + ":"), str(caught.value)
    assert words in caught.value.message


def test_numbers_at_the_limits_load() -> None:
    doc = parse_document("a: 1e4000\nb: " + "9" * 1000 + "\nc: -1.5e-4000\n")
    assert doc.value == {"a": Decimal("1E+4000"), "b": int("9" * 1000), "c": Decimal("-1.5E-4000")}


def test_timestamps_stay_text() -> None:
    doc = parse_document("expires_at: 2027-06-30T00:00:00Z\n")
    assert doc.value == {"expires_at": "2027-06-30T00:00:00Z"}


def test_positions_of_keys_and_items() -> None:
    doc = parse_document("a:\n  b: [x, y]\n  c:\n    - {d: 1}\n", "f.yaml")
    assert doc.positions[("a", "b")] == (2, 3)
    assert doc.positions[("a", "c", 0)] == (4, 7)
    assert str(doc.location(("a", "c", 0, "d"))) == "f.yaml:4:8: $.a.c[0].d"
    # An unknown path falls back to its nearest known parent.
    assert str(doc.location(("a", "zzz"))) == "f.yaml:1:1: $.a.zzz"


def test_json_documents_have_positions_too() -> None:
    doc = parse_document('{\n  "a": {"b": 1.25}\n}\n', "f.json")
    assert doc.value == {"a": {"b": Decimal("1.25")}}
    assert doc.positions[("a", "b")] == (2, 9)


def test_duplicate_keys_and_bad_syntax_name_the_line() -> None:
    with pytest.raises(InputError, match="duplicate key") as caught:
        parse_document("a: 1\nb: 2\na: 3\n", "f.yaml")
    assert ":3:" in str(caught.value)
    with pytest.raises(InputError) as caught:
        parse_document("a: [1, 2\n", "f.yaml")
    assert str(caught.value).startswith("f.yaml:2:")


def test_non_string_keys_are_refused() -> None:
    with pytest.raises(InputError, match="keys must be strings"):
        parse_document("1: a\n", "f.yaml")


def test_files_that_cannot_be_documents(tmp_path: Path) -> None:
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(InputError, match="not UTF-8"):
        load_document(binary)
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * (1 << 20) + "\n")
    with pytest.raises(InputError, match="more than"):
        load_document(big)
    with pytest.raises(InputError, match="no such file"):
        load_document(tmp_path / "missing.yaml")


def test_validation_names_the_first_problem_and_lists_all() -> None:
    schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["n"],
        "properties": {"n": {"type": "integer"}, "name": {"type": "string"}},
    }
    doc = parse_document("n: 1.0\nnmae: x\n", "f.yaml")
    # 1.0 is an integer, as JSON Schema says; the misspelt key is the problem.
    with pytest.raises(InputError) as caught:
        validate_document(doc, make_validator(schema))
    assert str(caught.value) == (
        "f.yaml:2:1: $.nmae: invalid document: unknown key 'nmae'; did you mean 'name'?"
    )
    doc = parse_document("n: 1.5\nother: 1\n", "f.yaml")
    with pytest.raises(InputError) as caught:
        validate_document(doc, make_validator(schema))
    assert caught.value.details["line"] == 1
    assert len(caught.value.details["errors"]) == 2


def test_patterns_end_at_the_end_of_text() -> None:
    # Python's `$` matches before a final newline; JSON Schema's does not.
    from schema import validator

    manifest = {
        "schema_version": 1,
        "id": "acme/x\n",
        "version": "1.0.0",
        "protocol": "asgi",
        "endpoint": "asgi:pkg.mod:app",
        "capabilities": ["a.b"],
    }
    errors = [e.message for e in validator("agent").iter_errors(manifest)]
    assert len(errors) == 1 and "does not match" in errors[0]
    manifest["id"] = "acme/x"
    assert list(validator("agent").iter_errors(manifest)) == []


def test_json_escapes_of_a_character_past_the_bmp_load_as_that_character() -> None:
    # JSON writes U+1F600 as two escapes, which YAML reads as two surrogates: a pair is one
    # character (the campaign of tests/campaign/test_numbers.py found them refused).
    doc = parse_document('{"a": "x\\ud83d\\ude00y", "\\ud83d\\ude01": 1}', "f.json")
    assert doc.value == {"a": "x\U0001f600y", "\U0001f601": 1}
    with pytest.raises(InputError, match="lone UTF-16 surrogate"):
        parse_document('{"a": "x\\ud83dy"}', "f.json")
