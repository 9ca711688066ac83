"""Results: statuses, typed truncated renderings, the CLI block, combinators and quantifiers."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from evals.checks import grade, render_result, render_value
from schema import jsontext
from schema.errors import Location
from tests.evals._checks import GENEROUS_TIMEOUT_S, checks, doc, j, one


def test_the_cli_block_renders_exactly_as_checks_md_shows() -> None:
    padding = "".join(f"# line {n}\n" for n in range(1, 42))
    source = padding + (
        "- name: line item SKUs\n"
        "  path: $.output.line_items[*].sku\n"
        "  contains_only: {path: $.expected.skus}\n"
    )
    skus = [f"A-{i:03d}" for i in range(1, 24)]
    items = [{"sku": sku} for sku in skus]
    items.insert(7, {"sku": "Z-999"})
    result = grade(checks(source), doc({"line_items": items}, {"skus": skus})).results[0]
    assert render_result(result) == [
        "FAIL contains_only line item SKUs (suite.yaml:42)",
        "  path:     $.output.line_items[*].sku -> 24 nodes",
        '  expected: array(23) ["A-001", "A-002", "A-003", "A-004", "A-005", … +18]',
        '  actual:   array(24) ["A-001", "A-002", "A-003", "A-004", "A-005", … +19]',
        "  extra:    $['output']['line_items'][7]['sku'] = \"Z-999\"",
    ]


def test_a_block_without_notes_shows_the_detail_and_a_pass_is_one_line() -> None:
    failed = one(
        "{name: total, path: $.output.total, approx: 1234.50, abs: 0.01}",
        doc({"total": j("1234.00")}),
    )
    assert render_result(failed, "suite.yaml:7") == [
        "FAIL approx total (suite.yaml:7)",
        "  path:     $.output.total",
        "  expected: 1234.50",
        "  actual:   1234.00",
        "  detail:   expected ≈ 1234.50 (±0.01), got 1234.00",
    ]
    passed = one("{path: $.output.total, gt: 0}", doc({"total": 1}))
    assert render_result(passed) == ["PASS gt $.output.total (suite.yaml:1)"]
    assert render_result(passed, Location("cases/public.jsonl", 12)) == [
        "PASS gt $.output.total (public.jsonl:12)"
    ]
    missing = one("{path: $.output.total, gt: 0}", doc({}))
    assert render_result(missing) == [
        "NO-MATCH gt $.output.total (suite.yaml:1)",
        "  path:     $.output.total",
        "  expected: 0",
        "  actual:   nothing",
        "  detail:   nothing at $.output.total",
    ]


def test_typed_truncated_renderings() -> None:
    assert render_value("INV-1") == '"INV-1"'
    assert render_value(j("1234.50")) == "1234.50"
    assert render_value(Decimal("1E+2")) == "100"
    assert render_value(True) == "true"
    assert render_value(None) == "null"
    assert render_value([]) == "array(0) []"
    assert render_value({"b": 1, "a": [1, 2]}) == 'object(2) {"a": [1, 2], "b": 1}'
    assert render_value({"z": {"y": {"x": 1}}}) == 'object(1) {"z": {"y": object(1)}}'
    assert render_value(list(range(23))) == "array(23) [0, 1, 2, 3, 4, … +18]"
    long = "x" * 500
    assert render_value(long) == 'string(500) "' + "x" * 120 + '…"'
    assert render_value(["y" * 100]) == 'array(1) ["' + "y" * 40 + '…"]'
    assert render_value("line\nbreak\u2028") == '"line\\nbreak\u2028"'
    assert render_value("lone \ud800") == '"lone \\ud800"'
    wide = [{f"key{i}": "v" * 39 for i in range(5)} for _ in range(5)]
    text = render_value(wide)
    assert len(text) == 200 and text.endswith("…")


def test_results_are_json_with_fixed_keys_and_deterministic_bytes() -> None:
    source = (
        "- {path: $.output.total, approx: 10, abs: 0.5, critical: true}\n"
        "- {path: '$.output.items[*]', each: {type: integer}}\n"
        "- {path: $.output.name, similar: {to: Acme}}\n"
    )
    document = doc({"total": j("9.25"), "items": [1, "2", 3.5], "name": "Acme Inc"})
    first = grade(checks(source), document).to_json()
    second = grade(checks(source), document).to_json()
    assert jsontext.dumps(first, sort_keys=True) == jsontext.dumps(second, sort_keys=True)
    assert first["passed"] is False
    keys = {
        "name",
        "predicate",
        "status",
        "passed",
        "critical",
        "detail",
        "path",
        "expected",
        "actual",
        "offending",
        "metrics",
        "notes",
    }
    assert all(set(result) == keys for result in first["results"])
    total, items, name = first["results"]
    assert total["critical"] is True and total["status"] == "fail"
    assert items["offending"] == ["$['output']['items'][1]", "$['output']['items'][2]"]
    assert items["metrics"] == {"nodes": 3, "passed": 1}
    assert name["metrics"] == {"similarity": Decimal("0.5")}


def test_all_any_not() -> None:
    document = doc({"a": 1, "b": 2})
    both = one("{all: [{path: $.output.a, equals: 1}, {path: $.output.b, equals: 3}]}", document)
    assert (both.status, both.detail) == ("fail", "1 of 2 checks failed")
    assert both.notes == (("failed", "equals $.output.b: expected 3, got 2"),)
    assert both.offending == ["$['output']['b']"]
    either = one("{any: [{path: $.output.a, equals: 0}, {path: $.output.b, equals: 2}]}", document)
    assert (either.status, either.detail) == ("pass", "equals $.output.b passed")
    neither = one("{any: [{path: $.output.x, equals: 0}, {path: $.output.y, equals: 2}]}", document)
    assert (neither.status, neither.detail) == ("no-match", "none of 2 checks passed")
    inherited = one("{path: $.output.a, any: [{equals: 0}, {gt: 0}]}", document)
    assert inherited.passed and inherited.path == "$.output.a"
    negated = one("{path: $.output.a, not: {one_of: [1, 2]}}", document)
    assert (negated.status, negated.detail) == (
        "fail",
        "expected one_of $.output.a not to hold, but it did: expected one of [1, 2], got 1",
    )
    assert one("{path: $.output.a, not: {equals: 5}}", document).passed


def test_each_some_none_and_mostly() -> None:
    document = doc({"q": [3, -1, 2, 0]})
    each = one("{path: '$.output.q[*]', each: {gt: 0}}", document)
    assert (each.status, each.detail) == ("fail", "2 of 4 nodes failed")
    assert each.notes == (
        ("failed", "$['output']['q'][1]: expected > 0, got -1"),
        ("failed", "$['output']['q'][3]: expected > 0, got 0"),
    )
    assert render_result(each)[:2] == [
        "FAIL each gt $.output.q[*] (suite.yaml:1)",
        "  path:     $.output.q[*] -> 4 nodes",
    ]
    mostly = one("{path: '$.output.q[*]', each: {gte: 0}, mostly: 0.75}", document)
    assert (mostly.status, mostly.detail) == ("pass", "3 of 4 nodes passed (0.75), need ≥ 0.75")
    assert mostly.metrics == {"nodes": 4, "passed": 3, "pass_rate": j("0.75")}
    strict = one("{path: '$.output.q[*]', each: {gt: 0}, mostly: 0.9}", document)
    assert (strict.status, strict.detail) == ("fail", "2 of 4 nodes passed (0.5), need ≥ 0.9")
    some = one("{path: '$.output.q[*]', some: {lt: 0}}", document)
    assert (some.status, some.detail) == ("pass", "1 of 4 nodes passed")
    none = one("{path: '$.output.q[*]', none: {lt: 0}}", document)
    assert (none.status, none.detail) == ("fail", "1 of 4 nodes passed, expected none")
    assert none.offending == ["$['output']['q'][1]"]
    assert none.notes == (("passed", "$['output']['q'][1] = -1"),)
    inner = one(
        "{path: '$.output.q[*]', each: {any: [{gt: 0}, {equals: 0}, {equals: -1}]}}", document
    )
    assert inner.passed


def test_quantifiers_on_no_nodes() -> None:
    empty = doc({"q": []})
    for word in ("each", "some", "none"):
        result = one(f"{{path: '$.output.q[*]', {word}: {{gt: 0}}}}", empty)
        assert (result.status, result.detail) == ("no-match", "no nodes at $.output.q[*]")
        allowed = one(f"{{path: '$.output.q[*]', {word}: {{gt: 0}}, allow_empty: true}}", empty)
        assert (allowed.status, allowed.detail) == ("pass", "no nodes (allowed)")


def test_a_singular_failure_names_its_node_as_offending() -> None:
    result = one("{path: '$.output.items[1].qty', gt: 0}", doc({"items": [{}, {"qty": 0}]}))
    assert result.offending == ["$['output']['items'][1]['qty']"]


def test_a_kept_detail_is_the_one_a_fresh_check_writes() -> None:
    text = """
- {name: eq, path: $.output.v, equals: {path: $.expected.v}}
- {name: lit, path: $.output.v, equals: 1}
- {name: in, path: $.output.v, one_of: [1, "1", true, 1.0]}
- {name: range, path: $.output.v, between: [0, 2]}
- {name: ne, path: $.output.v, not_equals: [1, 2]}
"""
    # Equal in Python, rendered apart: each must get its own detail, in any order.
    values: list[Any] = [1, True, 1.0, Decimal("1.0"), Decimal("1.00"), 0.0, -0.0, Decimal("-0")]
    values += ["1", "x" * 100, "x" * 100 + "y", None, [1], {"v": 1}, False, 0]
    kept = checks(text)
    for value in [*values, *reversed(values), *values]:
        for expected in (value, 1, "1"):
            document = doc({"v": value}, {"v": expected})
            again = grade(kept, document, timeout_s=GENEROUS_TIMEOUT_S)
            fresh = grade(checks(text), document, timeout_s=GENEROUS_TIMEOUT_S)
            assert [r.to_json() for r in again.results] == [r.to_json() for r in fresh.results]
