"""Each predicate: a passing and a failing example, with the exact status and detail line."""

from __future__ import annotations

from typing import Any

import pytest

from tests.evals._checks import doc, j, one

CASES: list[tuple[str, str, str, str, str]] = [
    # (check, output JSON, expected JSON, status, detail)
    # exists
    ("{path: $.output.a, exists: true}", '{"a": null}', "{}", "pass", "found 1 node"),
    (
        "{path: $.output.b, exists: true}",
        '{"a": 1}',
        "{}",
        "no-match",
        "expected a node, found none",
    ),
    ("{path: $.output.b, exists: false}", '{"a": 1}', "{}", "pass", "found no node"),
    (
        "{path: $.output.a, exists: false}",
        '{"a": 1}',
        "{}",
        "fail",
        "expected no node, found 1 node",
    ),
    ("{path: '$.output[*]', exists: true}", "[]", "{}", "no-match", "expected a node, found none"),
    # equals / not_equals: deep JSON equality
    ("{path: $.output, equals: 1}", "1.0", "{}", "pass", "expected 1, got 1.0"),
    ("{path: $.output, equals: 1}", "true", "{}", "fail", "expected 1, got true"),
    (
        "{path: $.output, equals: {a: [1, {b: 2}]}}",
        '{"a": [1.0, {"b": 2}]}',
        "{}",
        "pass",
        'expected {"a": [1, object(1)]}, got {"a": [1.0, object(1)]}',
    ),
    (
        "{path: $.output, equals: {path: $.expected.x}}",
        '"INV-01"',
        '{"x": "INV-001"}',
        "fail",
        'expected "INV-001", got "INV-01"',
    ),
    (
        "{path: $.output, equals: {path: $.expected.x}}",
        '"a"',
        "{}",
        "no-match",
        "nothing at $.expected.x (the expected value)",
    ),
    ("{path: $.output.x, equals: 1}", "{}", "{}", "no-match", "nothing at $.output.x"),
    ("{path: $.output, not_equals: X}", '"Y"', "{}", "pass", 'expected anything but "X", got "Y"'),
    ("{path: $.output, not_equals: X}", '"X"', "{}", "fail", 'expected anything but "X", got "X"'),
    ("{path: $.output, equals: [1, 2]}", "[2, 1]", "{}", "fail", "expected [1, 2], got [2, 1]"),
    # gt gte lt lte between
    ("{path: $.output, gt: 5}", "5.01", "{}", "pass", "expected > 5, got 5.01"),
    ("{path: $.output, gt: 5}", "5", "{}", "fail", "expected > 5, got 5"),
    ("{path: $.output, gte: 5}", "5.0", "{}", "pass", "expected ≥ 5, got 5.0"),
    (
        "{path: $.output, lt: 0.3}",
        "0.30000000000000004",
        "{}",
        "fail",
        "expected < 0.3, got 0.30000000000000004",
    ),
    ("{path: $.output, lte: 0.3}", "0.3", "{}", "pass", "expected ≤ 0.3, got 0.3"),
    ("{path: $.output, gt: 5}", '"7"', "{}", "type-mismatch", 'expected a number, got string "7"'),
    (
        "{path: $.output, gt: 0}",
        "true",
        "{}",
        "type-mismatch",
        "expected a number, got boolean true",
    ),
    (
        "{path: $.output, gt: {path: $.expected.min}}",
        "3",
        '{"min": "2"}',
        "type-mismatch",
        'expected value at $.expected.min is string "2", not a number',
    ),
    ("{path: $.output, between: [1, 10]}", "10", "{}", "pass", "expected between 1 and 10, got 10"),
    (
        "{path: $.output, between: [1, 10]}",
        "10.01",
        "{}",
        "fail",
        "expected between 1 and 10, got 10.01",
    ),
    (
        "{path: $.output, between: [0, {path: $.expected.max}]}",
        "3",
        '{"max": 2.5}',
        "fail",
        "expected between 0 and 2.5, got 3",
    ),
    # approx: Decimal arithmetic, rel relative to the expected value
    (
        "{path: $.output, approx: 1234.50, abs: 0.01}",
        "1234.49",
        "{}",
        "pass",
        "expected ≈ 1234.50 (±0.01), got 1234.49",
    ),
    (
        "{path: $.output, approx: 1234.50, abs: 0.01}",
        "1234.00",
        "{}",
        "fail",
        "expected ≈ 1234.50 (±0.01), got 1234.00",
    ),
    (
        "{path: $.output, approx: 0.3, abs: 0}",
        "0.30",
        "{}",
        "pass",
        "expected ≈ 0.3 (±0), got 0.30",
    ),
    (
        "{path: $.output, approx: 200, rel: 0.01}",
        "198",
        "{}",
        "pass",
        "expected ≈ 200 (±1%), got 198",
    ),
    (
        "{path: $.output, approx: 200, rel: 0.01}",
        "197.99",
        "{}",
        "fail",
        "expected ≈ 200 (±1%), got 197.99",
    ),
    (
        "{path: $.output, approx: 100, abs: 0.5, rel: 0.001}",
        "100.4",
        "{}",
        "pass",
        "expected ≈ 100 (±0.5 or ±0.1%), got 100.4",
    ),
    (
        "{path: $.output, approx: {path: $.expected.t}, abs: 0.01}",
        "1.005",
        '{"t": 1}',
        "pass",
        "expected ≈ 1 (±0.01), got 1.005",
    ),
    (
        "{path: $.output, approx: 1, abs: 0.1}",
        "null",
        "{}",
        "type-mismatch",
        "expected a number, got null",
    ),
    # one_of / not_one_of
    (
        "{path: $.output, one_of: [EUR, USD]}",
        '"USD"',
        "{}",
        "pass",
        'expected one of ["EUR", "USD"], got "USD"',
    ),
    (
        "{path: $.output, one_of: [EUR, USD]}",
        '"usd"',
        "{}",
        "fail",
        'expected one of ["EUR", "USD"], got "usd"',
    ),
    ("{path: $.output, one_of: [1, 2]}", "2.0", "{}", "pass", "expected one of [1, 2], got 2.0"),
    (
        "{path: $.output, not_one_of: [spam, junk]}",
        '"ham"',
        "{}",
        "pass",
        'expected none of ["spam", "junk"], got "ham"',
    ),
    (
        "{path: $.output, not_one_of: [spam, junk]}",
        '"spam"',
        "{}",
        "fail",
        'expected none of ["spam", "junk"], got "spam"',
    ),
    # contains / icontains
    (
        "{path: $.output, contains: Total}",
        '"Grand Total: 5"',
        "{}",
        "pass",
        'expected a string containing "Total", got "Grand Total: 5"',
    ),
    (
        "{path: $.output, contains: total}",
        '"Grand Total: 5"',
        "{}",
        "fail",
        'expected a string containing "total", got "Grand Total: 5"',
    ),
    (
        "{path: $.output, icontains: total}",
        '"Grand Total: 5"',
        "{}",
        "pass",
        'expected a string containing "total" (ignoring case), got "Grand Total: 5"',
    ),
    (
        "{path: $.output, contains: {a: 1}}",
        '[{"a": 1.0}, 2]',
        "{}",
        "pass",
        'expected an array containing {"a": 1}, got [{"a": 1.0}, 2]',
    ),
    (
        "{path: $.output, contains: 1}",
        "[true, 2]",
        "{}",
        "fail",
        "expected an array containing 1, got [true, 2]",
    ),
    (
        "{path: $.output, icontains: ABC}",
        '["x", "abc"]',
        "{}",
        "pass",
        'expected an array containing "ABC" (ignoring case), got ["x", "abc"]',
    ),
    (
        "{path: $.output, contains: a}",
        "12",
        "{}",
        "type-mismatch",
        "expected a string or an array, got number 12",
    ),
    (
        "{path: $.output, contains: 1}",
        '"a1"',
        "{}",
        "type-mismatch",
        "expected value is number 1, not a string",
    ),
    # contains_all / contains_any / contains_only
    (
        "{path: $.output, contains_all: [a, b]}",
        '["b", "c", "a"]',
        "{}",
        "pass",
        "all 2 expected items present",
    ),
    (
        "{path: $.output, contains_all: [a, b, d]}",
        '["b", "c"]',
        "{}",
        "fail",
        "missing 2 of 3 expected items",
    ),
    ("{path: $.output, contains_any: [x, c]}", '["b", "c"]', "{}", "pass", 'found "c"'),
    (
        "{path: $.output, contains_any: [x, y]}",
        '["b", "c"]',
        "{}",
        "fail",
        'expected any of ["x", "y"], got ["b", "c"]',
    ),
    (
        "{path: $.output, contains_only: [a, b, b]}",
        '["b", "a", "b"]',
        "{}",
        "pass",
        "the same 3 items",
    ),
    (
        "{path: $.output, contains_only: [a, b, b]}",
        '["b", "a", "a"]',
        "{}",
        "fail",
        "1 extra, 1 missing",
    ),
    (
        "{path: $.output, contains_only: [a]}",
        '"a"',
        "{}",
        "type-mismatch",
        'expected an array, got string "a"',
    ),
    # starts_with / ends_with
    (
        "{path: $.output, starts_with: INV-}",
        '"INV-7"',
        "{}",
        "pass",
        'expected a string starting with "INV-", got "INV-7"',
    ),
    (
        "{path: $.output, ends_with: .pdf}",
        '"a.PDF"',
        "{}",
        "fail",
        'expected a string ending with ".pdf", got "a.PDF"',
    ),
    (
        "{path: $.output, ends_with: .pdf, normalize: [casefold]}",
        '"a.PDF"',
        "{}",
        "pass",
        'expected a string ending with ".pdf", got "a.pdf" (after casefold)',
    ),
    (
        "{path: $.output, starts_with: '1'}",
        "12",
        "{}",
        "type-mismatch",
        "expected a string, got number 12",
    ),
    # matches / full_match (RE2)
    (
        r"{path: $.output, matches: '(?i)\bnet\s+\d+'}",
        '"Terms: NET 30 days"',
        "{}",
        "pass",
        'expected a string matching /(?i)\\bnet\\s+\\d+/, got "Terms: NET 30 days"',
    ),
    (
        r"{path: $.output, full_match: '\d{4}-\d{2}-\d{2}'}",
        '"2024-03-14Z"',
        "{}",
        "fail",
        'expected a string fully matching /\\d{4}-\\d{2}-\\d{2}/, got "2024-03-14Z"',
    ),
    (
        r"{path: $.output, full_match: '\d+'}",
        "12",
        "{}",
        "type-mismatch",
        "expected a string, got number 12",
    ),
    # length / count
    ("{path: $.output, length: 3}", '"abc"', "{}", "pass", "expected length 3, got length 3"),
    (
        "{path: $.output, length: {min: 1, max: 2}}",
        "[1, 2, 3]",
        "{}",
        "fail",
        "expected length 1 to 2, got length 3",
    ),
    ("{path: $.output, length: {min: 1}}", "{}", "{}", "fail", "expected length ≥ 1, got length 0"),
    (
        "{path: $.output, length: {path: $.expected.n}}",
        "[1]",
        '{"n": 1.0}',
        "pass",
        "expected length 1, got length 1",
    ),
    (
        "{path: $.output, length: 1}",
        "7",
        "{}",
        "type-mismatch",
        "expected a string, array or object, got number 7",
    ),
    ("{path: '$.output[*]', count: 2}", "[1, 2]", "{}", "pass", "expected 2 nodes, got 2"),
    (
        "{path: '$.output[?@ > 1]', count: {max: 1}}",
        "[1, 2, 3]",
        "{}",
        "fail",
        "expected ≤ 1 nodes, got 2",
    ),
    ("{path: $.output.x, count: 0}", "{}", "{}", "pass", "expected 0 nodes, got 0"),
    (
        "{path: '$.output[*]', count: {path: $.expected.n}}",
        "[1, 2]",
        '{"n": 3}',
        "fail",
        "expected 3 nodes, got 2",
    ),
    (
        "{path: '$.output[*]', count: {path: $.expected.n}}",
        "[1]",
        '{"n": 1.5}',
        "type-mismatch",
        "expected value at $.expected.n is number 1.5, not a whole number",
    ),
    # type: as JSON Schema means it
    ("{path: $.output, type: integer}", "1.0", "{}", "pass", "expected integer, got integer 1.0"),
    (
        "{path: $.output, type: integer}",
        "1.5",
        "{}",
        "type-mismatch",
        "expected integer, got number 1.5",
    ),
    (
        "{path: $.output, type: number}",
        "true",
        "{}",
        "type-mismatch",
        "expected number, got boolean true",
    ),
    (
        "{path: $.output, type: [string, 'null']}",
        "null",
        "{}",
        "pass",
        "expected string or null, got null",
    ),
    (
        "{path: $.output, type: array}",
        '{"a": 1}',
        "{}",
        "type-mismatch",
        'expected array, got object(1) {"a": 1}',
    ),
    # similar (ANLS)
    (
        "{path: $.output, similar: {to: ACME Corporation, min: 0.8}}",
        '"acme  corporation "',
        "{}",
        "pass",
        'similarity 1 ≥ 0.8 to "ACME Corporation", got "acme  corporation "',
    ),
    (
        "{path: $.output, similar: {to: ACME Corporation, min: 0.8}}",
        '"Acme Corp"',
        "{}",
        "fail",
        'similarity 0.5625 < 0.8 to "ACME Corporation", got "Acme Corp"',
    ),
    (
        "{path: $.output, similar: {to: [Jon Smith, John Smith], min: 0.9}}",
        '"john smith"',
        "{}",
        "pass",
        'similarity 1 ≥ 0.9 to ["Jon Smith", "John Smith"], got "john smith"',
    ),
    (
        "{path: $.output, similar: {to: abcdef, min: 0.1}}",
        '"uvwxyz"',
        "{}",
        "fail",
        'similarity 0 < 0.1 to "abcdef", got "uvwxyz"',
    ),
]


@pytest.mark.parametrize(
    ("check", "output", "expected", "status", "detail"),
    CASES,
    ids=[f"{i:02d}" for i in range(len(CASES))],
)
def test_predicate(check: str, output: str, expected: str, status: str, detail: str) -> None:
    result = one(check, doc(j(output), j(expected)))
    assert (result.status, result.detail) == (status, detail)
    assert result.passed is (status == "pass")


def test_normalizers_apply_in_order_to_both_sides() -> None:
    document = doc(" Ｈｅｌｌｏ\u3000 World ")
    checks = [
        (
            "{path: $.output, equals: hello world, normalize: [nfkc, casefold, collapse_whitespace,"
            " strip]}",
            "pass",
        ),
        (
            "{path: $.output, equals: '  HELLO   world', normalize: [nfkc, collapse_whitespace,"
            " casefold]}",
            "fail",
        ),
        ("{path: $.output, equals: HELLO WORLD, normalize: [strip, casefold]}", "fail"),
    ]
    for check, status in checks:
        assert one(check, document).status == status, check
    phone = doc("+1 (555) 010-9999")
    assert one("{path: $.output, equals: '15550109999', normalize: [digits_only]}", phone).passed
    wide = doc("１２３")
    assert one("{path: $.output, equals: '123', normalize: [nfkc, digits_only]}", wide).passed
    assert not one("{path: $.output, equals: '123', normalize: [digits_only]}", wide).passed


def test_normalize_reaches_strings_inside_lists_and_path_operands() -> None:
    document = doc([" A-1", "a-2 "], {"skus": ["a-2", "A-1"]})
    check = "{path: $.output, contains_only: {path: $.expected.skus}, normalize: [strip, casefold]}"
    assert one(check, document).passed


def test_contains_only_names_the_extra_and_missing_nodes() -> None:
    skus = [f"A-{i:03d}" for i in range(1, 24)]
    items = [{"sku": sku} for sku in skus]
    items.insert(7, {"sku": "Z-999"})
    check = (
        "{name: line item SKUs, path: '$.output.line_items[*].sku', "
        "contains_only: {path: $.expected.skus}}"
    )
    result = one(check, doc({"line_items": items}, {"skus": [*skus[:-1], "A-100"]}))
    assert result.status == "fail"
    assert result.detail == "2 extra, 1 missing"
    assert result.offending == [
        "$['output']['line_items'][7]['sku']",
        "$['output']['line_items'][23]['sku']",
    ]
    assert result.notes == (
        ("extra", "$['output']['line_items'][7]['sku'] = \"Z-999\""),
        ("extra", "$['output']['line_items'][23]['sku'] = \"A-023\""),
        ("missing", '"A-100"'),
    )


def test_contains_all_notes_what_is_missing() -> None:
    result = one("{path: $.output, contains_all: [a, b, c, d, e, f, g]}", doc(["a"]))
    assert result.notes == (
        ("missing", '"b"'),
        ("missing", '"c"'),
        ("missing", '"d"'),
        ("missing", '"e"'),
        ("missing", '"f"'),
        ("missing", "… +1 more"),
    )


F1_GOLD = [
    {"sku": "A", "qty": 2, "unit_price": "9.50"},
    {"sku": "B", "qty": 1, "unit_price": "3.00"},
    {"sku": "C", "qty": 5, "unit_price": "1.25"},
]


def _f1(items: Any, minimum: str = "1.0", fields: str = "[qty, unit_price]") -> Any:
    check = (
        f"{{path: $.output.items, f1: {{to: {{path: $.expected.items}}, key: sku, "
        f"fields: {fields}, min: {minimum}}}}}"
    )
    return one(check, doc({"items": items}, {"items": F1_GOLD}))


def test_f1_perfect_extraction() -> None:
    shuffled = [F1_GOLD[2], F1_GOLD[0], {**F1_GOLD[1], "qty": 1.0}]
    result = _f1(shuffled)
    assert result.passed
    assert result.metrics == {"f1": 1, "precision": 1, "recall": 1}
    assert result.detail == "f1 1 ≥ 1 (precision 1, recall 1; 6 of 6 fields)"


def test_f1_counts_wrong_extra_and_missing_fields() -> None:
    predicted = [
        {"sku": "A", "qty": 2, "unit_price": "9.50"},
        {"sku": "B", "qty": 3, "unit_price": "3.00"},  # qty wrong
        {"sku": "Z", "qty": 1, "unit_price": "1.00"},  # extra item
    ]  # C missing
    result = _f1(predicted, minimum="0.5")
    # 3 true positives; predicted 6 fields, gold 6 fields
    assert result.metrics == {"f1": j("0.5"), "precision": j("0.5"), "recall": j("0.5")}
    assert result.passed
    failing = _f1(predicted, minimum="0.9")
    assert failing.status == "fail"
    assert failing.detail == "f1 0.5 < 0.9 (precision 0.5, recall 0.5; 3 of 6 fields)"
    assert failing.offending == ["$['output']['items'][1]['qty']", "$['output']['items'][2]"]
    assert failing.notes == (
        ("wrong", "$['output']['items'][1]['qty'] = 3, expected 1"),
        ("extra", '$[\'output\'][\'items\'][2] = {"qty": 1, "sku": "Z", "unit_price": "1.00"}'),
        ("missing", 'sku "C"'),
    )


def test_f1_edge_cases() -> None:
    empty = one(
        "{path: $.output, f1: {to: [], key: id}}",
        doc([]),
    )
    assert empty.passed and empty.metrics == {"f1": 1, "precision": 1, "recall": 1}
    nothing = one("{path: $.output, f1: {to: [{id: 1}], key: id}}", doc([]))
    assert nothing.status == "fail" and nothing.metrics["f1"] == 0
    duplicates = one(
        "{path: $.output, f1: {to: [{id: 1}], key: id, min: 0}}", doc([{"id": 1}, {"id": 1}])
    )
    assert duplicates.metrics == {"f1": j("0.6667"), "precision": j("0.5"), "recall": 1}
    strange_gold = one("{path: $.output, f1: {to: [null, {id: 1}], key: id}}", doc([{"id": 1}]))
    assert strange_gold.passed and strange_gold.metrics["recall"] == 1
    no_key = one("{path: $.output, f1: {to: [{x: 1}], key: id}}", doc([{"x": 1}, 5]))
    assert no_key.status == "fail"
    assert [label for label, _ in no_key.notes] == ["extra", "extra", "missing"]
    not_list = one("{path: $.output, f1: {to: [], key: id}}", doc({"id": 1}))
    assert not_list.status == "type-mismatch"


def test_schema_inline_and_from_a_file(tmp_path: Any) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "line.json").write_text(
        '{"type": "object", "required": ["qty"], "properties": {"qty": {"type": "integer"}},'
        ' "additionalProperties": false}'
    )
    good = doc({"lines": [{"qty": 1.0}, {"qty": 2}]})
    bad = doc({"lines": [{"qty": 1.5}, {"qty": 2, "note": "x"}, {}]})
    inline = "{path: '$.output.lines[*]', each: {schema: {type: object, required: [qty]}}}"
    assert one(inline, good).passed
    by_file = "{path: '$.output.lines[*]', each: {schema: {$ref: schemas/line.json}}}"
    assert one(by_file, good, base_dir=tmp_path).passed
    failed = one(by_file, bad, base_dir=tmp_path)
    assert failed.status == "fail"
    assert failed.offending == [
        "$['output']['lines'][0]",
        "$['output']['lines'][1]",
        "$['output']['lines'][2]",
    ]
    whole = one(
        "{path: $.output.lines, schema: {type: array, items: {$ref: '#/$defs/line'},"
        " $defs: {line: {type: object, properties: {qty: {type: integer}}}}}}",
        bad,
    )
    assert whole.status == "fail"
    assert whole.detail == (
        "1 schema error against the schema; first: $['output']['lines'][0]['qty']: "
        "expected an integer, got 1.5"
    )
    assert whole.offending == ["$['output']['lines'][0]['qty']"]


def test_schema_errors_are_listed_in_path_order() -> None:
    result = one(
        "{path: $.output, schema: {type: object, required: [a, b],"
        " properties: {c: {type: string}, d: {minimum: 2}}}}",
        doc({"c": 3, "d": 1}),
    )
    assert result.detail.startswith("4 schema errors against the schema; first: ")
    assert [line for _, line in result.notes] == [
        "$['output']: missing required key 'a'",
        "$['output']: missing required key 'b'",
        "$['output']['c']: expected a string, got 3",
        "$['output']['d']: expected a number >= 2, got 1",
    ]


EXTREMES = ["9.99E+4000", "-9.99E+4000", "1E-4000", "-1E-4000", "9" * 1000, "0E+4000", "0"]


@pytest.mark.parametrize("actual", EXTREMES)
@pytest.mark.parametrize(
    "check",
    [
        "{path: $.output, approx: 9.99E+4000, rel: 1E+4000}",
        "{path: $.output, approx: 1E-4000, abs: 1E-4000}",
        "{path: $.output, approx: {path: $.expected.x}, abs: 9.99E+4000, rel: 9.99E+4000}",
        "{path: $.output, between: [-9.99E+4000, 1E-4000]}",
        "{path: $.output, gt: {path: $.expected.x}}",
        "{path: $.output, equals: {path: $.expected.x}}",
        "{path: $.output, one_of: [1E+4000, 1E-4000]}",
        "{path: $.output, length: {path: $.expected.x}}",
        "{path: '$.output[?@ > 1E+300]', count: {min: 0}}",
    ],
)
def test_numbers_at_the_limits_grade_without_an_exception(check: str, actual: str) -> None:
    """Whatever number passed the limits, tolerances and comparisons compute and render."""
    statuses = set()
    for expected in EXTREMES:
        output = [j(actual)] if "[?" in check else j(actual)
        result = one(check, doc(output, {"x": j(expected)}))
        statuses.add(result.status)
        assert len(result.detail) < 1000  # numbers are shown short, never 4000 digits
    assert statuses & {"pass", "fail", "type-mismatch"}, statuses  # a verdict, computed
