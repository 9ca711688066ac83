"""Properties: grading is deterministic to the byte and never raises, whatever the agent sends."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evals.checks import STATUSES, grade, render_result
from evals.checks._similar import anls, levenshtein
from evals.checks._values import freeze, json_equal
from schema import jsontext
from tests.evals._checks import checks

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.decimals(
        allow_nan=False, allow_infinity=False, places=3, min_value=-(10**9), max_value=10**9
    )
    | st.text(max_size=12)
    | st.sampled_from(["A-001", "EUR", "", " x ", "\ud800", "١٢٣"])
)
_keys = st.sampled_from(["a", "b", "sku", "qty", "total", "items", "name", "pdf"])
JSON = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_keys, inner, max_size=5),
    max_leaves=25,
)

EVERY_PREDICATE = checks(
    """
- {path: $.output.total, exists: true}
- {path: $.output.total, equals: {path: $.expected.total}}
- {path: $.output.name, not_equals: x, normalize: [nfkc, casefold, strip, collapse_whitespace]}
- {path: $.output.total, gt: 0}
- {path: $.output.total, gte: {path: $.expected.total}}
- {path: $.output.total, lt: 10}
- {path: $.output.total, lte: 10}
- {path: $.output.total, between: [0, {path: $.expected.total}]}
- {path: $.output.total, approx: {path: $.expected.total}, abs: 0.01, rel: 0.001}
- {path: $.output.name, one_of: [A-001, EUR], normalize: [digits_only]}
- {path: $.output.name, not_one_of: {path: $.expected.items}}
- {path: $.output.items, contains: {path: $.expected.name}}
- {path: $.output.name, icontains: eur}
- {path: $.output.items, contains_all: {path: $.expected.items}}
- {path: $.output.items, contains_any: [1, a]}
- {path: '$.output.items[*]', contains_only: {path: $.expected.items}, normalize: [strip]}
- {path: $.output.name, starts_with: A}
- {path: $.output.name, ends_with: {path: $.expected.name}}
- {path: $.output.name, matches: '(?i)\\d+'}
- {path: $.output.name, full_match: '(a+)+$'}
- {path: $.output.items, length: {min: 1, max: 3}}
- {path: $.output.name, length: {path: $.expected.qty}}
- {path: '$.output..qty', count: {path: $.expected.qty}}
- {path: $.output.total, type: [integer, 'null']}
- {path: $.output, schema: {type: object, properties: {total: {type: number, minimum: 0}}}}
- {path: $.output.name, similar: {to: {path: $.expected.name}, min: 0.5}}
- {path: $.output.items, f1: {to: {path: $.expected.items}, key: sku, fields: [qty, a]}}
- {path: '$.output.items[*]', each: {type: object}}
- {path: '$.output.items[*]', each: {gt: 0}, mostly: 0.5, allow_empty: true}
- {path: '$.output..*', some: {equals: EUR}}
- {path: '$.output..*', none: {any: [{equals: 1}, {matches: x}]}}
- {path: '$.output.items[?@.qty > 1]', count: {max: 3}}
- {path: '$.output.items[?match(@.sku, "A-.*")]', exists: false}
- {all: [{path: $.output.a, not: {exists: true}}, {path: '$..b', count: {min: 0}}]}
- {path: $.output.pdf.text, contains: x}
"""
)


def _bytes(document: Any) -> str:
    return jsontext.dumps(grade(EVERY_PREDICATE, document).to_json(), sort_keys=True)


@settings(max_examples=120, deadline=None)
@given(output=JSON, expected=JSON)
def test_grading_is_deterministic_and_never_raises(output: Any, expected: Any) -> None:
    document = {"input": {}, "output": output, "expected": expected, "usage": {}, "case": {}}
    first = _bytes(document)
    assert first == _bytes(document)
    graded = grade(EVERY_PREDICATE, document)
    for result in graded.results:
        assert result.status in STATUSES
        assert result.passed is (result.status == "pass")
        assert "\n" not in result.detail and not result.detail.startswith("check raised")
        assert all("\n" not in line for line in render_result(result))
        assert result.expected is None or len(result.expected) <= 200
        assert result.actual is None or len(result.actual) <= 200


@settings(max_examples=200, deadline=None)
@given(a=st.text("abcé ", max_size=14), b=st.text("abcé ", max_size=14))
def test_levenshtein_is_the_textbook_distance(a: str, b: str) -> None:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    assert levenshtein(a, b) == previous[-1] == levenshtein(b, a)
    score = anls(a, b)
    assert score == anls(b, a) and (score == 0 or score >= Decimal("0.5")) and score <= 1


@settings(max_examples=200, deadline=None)
@given(a=JSON, b=JSON)
def test_freeze_agrees_with_json_equality(a: Any, b: Any) -> None:
    assert json_equal(a, b) == (freeze(a) == freeze(b))
    assert json_equal(a, a)
    assert not json_equal(True, 1) and json_equal(1, Decimal("1.0"))
