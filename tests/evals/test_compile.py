"""Invalid checks are suite errors at load time: file:line:col, a caret, the valid choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.checks import PREDICATES, compile_check, compile_checks
from schema.errors import CheckError, SuiteError
from tests.evals._checks import checks


def error(text: str, **kwargs: object) -> CheckError:
    with pytest.raises(CheckError) as caught:
        checks(text, **kwargs)
    assert isinstance(caught.value, SuiteError)
    assert caught.value.exit_code == 2
    return caught.value


def test_a_misspelt_predicate_names_the_close_one_and_lists_all() -> None:
    exc = error("- {path: $.output.total, name: t, gt: 0}\n- {path: $.output.total, equal: 3}\n")
    assert str(exc).startswith("suite.yaml:2:26: $[1].equal: unknown key 'equal'; ")
    assert "did you mean 'equals'?" in exc.message
    assert "predicates: " + ", ".join(sorted(PREDICATES)) in exc.message
    assert exc.details["line"] == 2 and exc.details["column"] == 26


def test_no_predicate_and_two_predicates() -> None:
    assert "a check needs one predicate: approx, between" in error("- {path: $.x}").message
    exc = error("- {path: $.x, equals: 1, gt: 0}")
    assert exc.message == (
        "one predicate per check, found 'equals' and 'gt' (combine them with all: [...])"
    )
    assert exc.location.path == "$[0].gt"


def test_a_bad_path_has_a_caret_under_the_fault() -> None:
    with pytest.raises(CheckError) as caught:
        compile_checks([{"path": "$.output..[", "count": 1}])
    assert caught.value.location.path == "$[0].path"
    lines = caught.value.message.splitlines()
    assert lines[0].startswith("invalid path: ")
    assert lines[1:] == ["    $.output..[", "               ^"]
    text = "- name: total\n  path: $.output.items[?@.qty >> 1]\n  count: 1\n"
    exc = error(text)
    assert str(exc).splitlines()[0].startswith("suite.yaml:2:3: $[0].path: invalid path: ")
    assert exc.message.splitlines()[1:] == [
        "    $.output.items[?@.qty >> 1]",
        "                           ^",
    ]


def test_a_bad_regex_has_a_caret_under_the_fault() -> None:
    exc = error("- {path: $.x, matches: 'ab(c|d'}")
    assert exc.message.splitlines() == [
        "invalid regex: missing ): ab(c|d",
        "    ab(c|d",
        "      ^",
    ]
    exc = error("- {path: $.x, full_match: 'a)b'}")
    assert exc.message.splitlines()[1:] == ["    a)b", "     ^"]
    exc = error(r"- {path: $.x, matches: '(?<=a)b'}")
    assert exc.message.splitlines()[0] == "invalid regex: invalid perl operator: (?<="
    assert exc.message.splitlines()[2] == "    ^"
    exc = error(r"- {path: $.x, matches: 'x\q'}")
    assert exc.message.splitlines()[2] == "     ^"
    assert (
        "patterns compile when the suite loads"
        in error("- {path: $.x, matches: {path: $.y}}").message
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- {path: $.x, gt: abc}", "gt needs a number or {path: …}, got string"),
        ("- {path: $.x, between: [5, 1]}", "between: low 5 is more than high 1"),
        ("- {path: $.x, between: [1]}", "between takes [low, high] (numbers or {path: …})"),
        ("- {path: $.x, approx: 1}", "approx needs a tolerance: abs, rel or both"),
        ("- {path: $.x, approx: 1, abs: -0.1}", "abs is a number ≥ 0, got number"),
        ("- {path: $.x, equals: 1, abs: 0.1}", "abs applies to approx, not to equals"),
        (
            "- {path: $.x, gt: 1, normalize: [strip]}",
            "normalize applies to string predicates (contains, contains_all, contains_any, "
            "contains_only, ends_with, equals, f1, full_match, icontains, length, matches, "
            "not_equals, not_one_of, one_of, similar, starts_with), not to gt",
        ),
        (
            "- {path: $.x, equals: a, normalize: [casefold, stirp]}",
            "unknown normalizer 'stirp'; did you mean 'strip'? normalizers: casefold, "
            "collapse_whitespace, digits_only, nfkc, strip",
        ),
        ("- {path: $.x, one_of: a}", "one_of needs an array or {path: …}, got string"),
        ("- {path: $.x, starts_with: 1}", "starts_with needs a string or {path: …}, got number"),
        (
            "- {path: $.x, equals: {path: $.y, extra: 1}}",
            "an operand {path: …} has no other keys, found 'extra'",
        ),
        (
            "- {path: $.x, type: intger}",
            "unknown type 'intger'; did you mean 'integer'? types: array, boolean, integer, null, "
            "number, object, string",
        ),
        ("- {path: $.x, length: -1}", "length takes a whole number ≥ 0, {path: …} or {min, max}"),
        ("- {path: $.x, count: {min: 3, max: 1}}", "count: min 3 is more than max 1"),
        ("- {path: $.x, count: {least: 3}}", "count takes {min, max} or {path: …}, not 'least'"),
        ("- {path: $.x, exists: yes please}", "exists is true or false, got string"),
        (
            "- {path: $.x, similar: {to: a, minimum: 0.5}}",
            "unknown key 'minimum' in similar; did you mean 'min'? similar takes to, min",
        ),
        (
            "- {path: $.x, similar: {to: a, min: 1.5}}",
            "similar: min is a number from 0 to 1, got number",
        ),
        ("- {path: $.x, f1: {to: [], fields: [a]}}", "f1 needs 'key'"),
        (
            "- {path: $.x, f1: {to: [], key: id, fields: [a, a]}}",
            "f1: fields is a list of distinct field names",
        ),
        (
            "- {path: $.x, schema: {type: integr}}",
            "invalid JSON Schema: 'integr' is not valid under any of the given schemas",
        ),
        (
            "- {path: $.x, schema: {$ref: 'http://example.com/s.json'}}",
            "schema {$ref: file} needs the suite directory to resolve against",
        ),
        (
            "- {path: $.x, schema: {items: {$ref: 'other.json#/a'}}}",
            "only local references (#/…) work in a check's schema, found 'other.json#/a'",
        ),
        (
            "- {path: $.x, each: {gt: 0}}",
            "each needs a non-singular path (a wildcard, slice, filter or descendant); "
            "this path is singular",
        ),
        (
            "- {path: '$.x[*]', some: {path: $.y, gt: 0}}",
            "inside each/some/none a check applies to each node: it takes no path",
        ),
        ("- {path: '$.x[*]', some: {gt: 0}, mostly: 0.5}", "mostly applies to each, not to some"),
        (
            "- {path: '$.x[*]', each: {gt: 0}, mostly: 0}",
            "mostly is a fraction of nodes, 0 < mostly ≤ 1",
        ),
        (
            "- {path: $.x, equals: 1, allow_empty: true}",
            "allow_empty applies to each/some/none, not to equals",
        ),
        (
            "- {path: '$.x[*]', each: {each: {gt: 0}}}",
            "each needs a non-singular path (a wildcard, slice, filter or descendant); "
            "inside each/some/none there is none",
        ),
        ("- {path: $.x, all: []}", "all takes a non-empty list of checks"),
        ("- {all: [{equals: 1}]}", "missing key 'path' (the JSONPath equals applies to)"),
        ("- {equals: 1}", "missing key 'path' (the JSONPath equals applies to)"),
        ("- {path: 3, equals: 1}", "a path is a JSONPath string like $.output.total, got number"),
        (
            "- just a string",
            "a check is a mapping like {path: $.output.total, equals: 1}, got string",
        ),
        (
            "- {path: $.x, equals: 1, name: ''}",
            "name is a non-empty string of at most 200 characters",
        ),
        ("- {path: $.x, equals: 1, critical: 1}", "critical is true or false, got number"),
        (
            "- {path: $.x, equals: 1}\n- {path: $.x, equals: 1}",
            "two checks are named 'equals $.x' (the other is check 0); give one a distinct name: "
            "per-check pass rates are kept by name",
        ),
    ],
)
def test_invalid_checks(text: str, message: str) -> None:
    assert error(text).message == message


def test_errors_point_at_the_key_at_fault() -> None:
    text = "- name: total\n  path: $.output.total\n  approx: 10\n  abs: -1\n"
    exc = error(text)
    assert (exc.location.line, exc.location.column, exc.location.path) == (4, 3, "$[0].abs")
    nested = (
        "- name: lines\n"
        "  path: '$.output[*]'\n"
        "  each:\n"
        "    any:\n"
        "      - {gt: 0}\n"
        "      - {lt: x}\n"
    )
    exc = error(nested)
    assert (exc.location.line, exc.location.path) == (6, "$[0].each.any[1].lt")


def test_checks_must_be_a_list() -> None:
    with pytest.raises(CheckError, match="checks are a list, got object"):
        compile_checks({"path": "$.x"})


def test_schema_refs_resolve_inside_the_suite_directory(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text('{"type": "integer"}')
    (tmp_path / "broken.json").write_text('{"type": ')
    (tmp_path / "bad.json").write_text('{"type": "integr"}')
    assert compile_check({"path": "$.x", "schema": {"$ref": "s.json"}}, base_dir=tmp_path)
    for ref, message in [
        ("../s.json", "'../s.json' is outside the suite directory (paths are relative to it)"),
        ("/etc/passwd", "'/etc/passwd' is outside the suite directory (paths are relative to it)"),
        ("missing.json", "cannot use schema 'missing.json': "),
        ("broken.json", "cannot use schema 'broken.json': "),
        ("bad.json", "invalid JSON Schema in bad.json: 'integr' is not valid under any of"),
    ]:
        with pytest.raises(CheckError) as caught:
            compile_check({"path": "$.x", "schema": {"$ref": ref}}, base_dir=tmp_path)
        assert caught.value.message.startswith(message), caught.value.message


def test_extensions_are_predicates_by_name() -> None:
    def even(actual: object, operand: object) -> bool:
        return isinstance(actual, int) and actual % 2 == 0

    compiled = compile_checks([{"path": "$.x", "even": None}], extensions={"even": even})
    assert compiled[0].predicate == "even"
    with pytest.raises(ValueError, match="reserved"):
        compile_checks([], extensions={"equals": even})
    exc = error("- {path: $.x, evem: null}")
    assert "unknown key 'evem'" in exc.message


def test_default_names_and_what_is_kept() -> None:
    compiled = checks(
        "- {path: $.output.total, gt: 0}\n"
        "- {path: '$.output.items[*].qty', each: {gt: 0}, critical: true}\n"
        "- {any: [{path: $.a, equals: 1}, {path: $.b, equals: 2}]}\n"
        "- {path: $.a, not: {equals: 1}}\n"
    )
    assert [c.name for c in compiled] == [
        "gt $.output.total",
        "each gt $.output.items[*].qty",
        "any [equals $.a, equals $.b]",
        "not $.a",
    ]
    assert [c.predicate for c in compiled] == ["gt", "each gt", "any", "not"]
    assert compiled[1].critical and not compiled[0].critical
    assert compiled[0].definition == {"path": "$.output.total", "gt": 0}
    source = compiled[1].source
    assert source is not None and (source.file, source.line) == ("suite.yaml", 2)
