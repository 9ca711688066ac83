"""Paths: singular by syntax, normalized paths, exact numbers in filters, RE2, limits."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import jsonpath_rfc9535
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evals.checks import compile_path, query
from evals.checks._limits import MAX_NODES, LimitExceeded
from evals.checks._values import json_equal
from schema.errors import CheckError
from tests.evals._checks import doc, j, one


@pytest.mark.parametrize(
    ("text", "singular"),
    [
        ("$", True),
        ("$.output.total", True),
        ("$.output.items[0].sku", True),
        ("$['output']['items'][-1]", True),
        ("$.output.items[*].sku", False),
        ("$.output.items[0:1]", False),
        ("$..sku", False),
        ("$.output.items[?@.qty > 1]", False),
        ("$['a','b']", False),
        ("$.output.items[0,1]", False),
    ],
)
def test_singular_is_decided_by_syntax(text: str, singular: bool) -> None:
    assert compile_path(text).singular is singular


def test_a_non_singular_path_gives_a_list_even_for_one_or_no_match() -> None:
    document = doc({"items": [{"sku": "A"}]})
    assert one("{path: '$.output.items[*].sku', equals: [A]}", document).passed
    assert one("{path: '$.output.nothing[*]', equals: []}", document).passed
    assert one("{path: '$.output.items[0].sku', equals: A}", document).passed


def test_normalized_paths_escape_names_as_rfc_9535_says() -> None:
    value = {"it's": {"a\\b": [1, {"\n": True}]}}
    nodes = query("$..*", value)
    assert [node.path for node in nodes] == [
        "$['it\\'s']",
        "$['it\\'s']['a\\\\b']",
        "$['it\\'s']['a\\\\b'][0]",
        "$['it\\'s']['a\\\\b'][1]",
        "$['it\\'s']['a\\\\b'][1]['\\n']",
    ]


def test_negative_indexes_are_normalized() -> None:
    assert [n.path for n in query("$.a[-1]", {"a": [1, 2, 3]})] == ["$['a'][2]"]
    result = one("{path: '$.output[-1]', equals: 4}", doc([1, 2, 3]))
    assert result.offending == ["$['output'][2]"]


@pytest.mark.parametrize(
    ("text", "indexes"),
    [
        ("$[?@.p < 10.5]", [0, 1, 2, 3, 4, 5, 6, 9]),
        ("$[?@.p == 0.1]", [2, 3]),
        ("$[?@.p == 1]", [1, 4]),
        ("$[?@.p >= 1e1]", [0, 5, 6, 7]),
        ("$[?@.p == true]", [8]),
        ("$[?@.p == '1']", [10]),
    ],
)
def test_filters_compare_decimal_json_numbers_exactly(text: str, indexes: list[int]) -> None:
    document = j(
        '[{"p": 10.49}, {"p": 1}, {"p": 0.1}, {"p": 0.10}, {"p": 1.0}, {"p": 10}, '
        '{"p": 10.00}, {"p": 1E+2}, {"p": true}, {"p": 0.30000000000000004}, {"p": "1"}]'
    )
    assert isinstance(document[0]["p"], Decimal)
    assert [n.path for n in query(text, document)] == [f"$[{i}]" for i in indexes]


def test_filter_literals_are_exact_not_floats() -> None:
    # 0.1 + 0.2 as a float is 0.30000000000000004; as JSON text it is not 0.3
    document = j('[{"p": 0.3}, {"p": 0.30000000000000004}]')
    assert [n.path for n in query("$[?@.p == 0.3]", document)] == ["$[0]"]
    assert [n.path for n in query("$[?@.p > 0.3]", document)] == ["$[1]"]


def test_filter_regexes_run_on_re2() -> None:
    hostile = "a" * 50_000 + "!"
    value = [hostile, "aaab"]
    # (a+)+$ backtracks exponentially on Python's engines; RE2 is linear.
    assert [n.path for n in query("$[?match(@, '(a+)+b')]", value)] == ["$[1]"]
    assert [n.path for n in query("$[?search(@, 'a{3}b')]", value)] == ["$[1]"]
    assert query("$[?match(@, '[')]", value) == []  # not an I-Regexp: false, as RFC 9535 says


def test_dot_in_an_i_regexp_matches_neither_cr_nor_lf() -> None:
    assert [n.value for n in query("$[?match(@, 'a.b')]", ["a\nb", "a\rb", "a\u2028b"])] == [
        "a\u2028b"
    ]


def test_a_bad_path_is_a_check_error_with_a_caret() -> None:
    with pytest.raises(CheckError) as caught:
        compile_path("$.output.items[?@.qty >]")
    message = caught.value.message
    lines = message.splitlines()
    assert lines[0].startswith("invalid path: ")
    assert lines[1] == "    $.output.items[?@.qty >]"
    assert lines[2].index("^") == 4 + lines[1][4:].index("]")
    assert caught.value.details["index"] == lines[2].index("^") - 4


def test_the_node_cap_is_deterministic() -> None:
    value = {"output": list(range(MAX_NODES + 1))}
    with pytest.raises(LimitExceeded):
        query("$.output[*]", value)
    with pytest.raises(LimitExceeded):
        query("$.output[?@ >= 0]", value)
    result = one("{path: '$.output[*]', count: {min: 1}}", doc(value["output"]))
    assert result.status == "fail"
    assert result.detail == f"path matches more than {MAX_NODES} nodes"
    assert len(query("$.output[1:]", value)) == MAX_NODES


def test_nested_descendant_filters_hit_the_step_budget() -> None:
    wide = {"output": [[[0] * 60 for _ in range(60)] for _ in range(60)]}
    result = one("{path: '$..[?count(@..*) > 0]', count: {min: 0}}", doc(wide["output"]))
    assert result.status == "fail"
    assert result.detail == "path needs more than 500000 steps to evaluate"


def test_a_pdf_key_in_ordinary_data_is_just_a_key() -> None:
    document = doc({"report": {"pdf": {"page_count": 3}}, "list": [{"pdf": 1}, {"pdf": 2}]})
    assert one("{path: $.output.report.pdf.page_count, equals: 3}", document).passed
    assert one("{path: '$.output.list[*].pdf', equals: [1, 2]}", document).passed
    assert one("{path: '$.output..pdf', count: 3}", document).passed


# --- the hand walker agrees with the engine -------------------------------------------

_keys = st.sampled_from(["a", "b", "c"])
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab", max_size=2),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=20,
)
_selector = st.sampled_from(
    ["'a'", "'b'", "*", "0", "-1", "1:", "::-1", "0:2", "'a','b'", "*,0", "5", "'c',-1"]
)


@settings(max_examples=150, deadline=None)
@given(value=_json, selectors=st.lists(_selector, min_size=1, max_size=4))
def test_the_hand_walker_matches_the_reference_engine(value: Any, selectors: list[str]) -> None:
    text = "$" + "".join(f"[{s}]" for s in selectors)
    path = compile_path(text)
    ours = query(text, value)
    reference = jsonpath_rfc9535.find(text, value)
    assert [n.path for n in ours] == reference.paths()
    assert json_equal([n.value for n in ours], reference.values())
    if path.singular:
        assert len(ours) <= 1


def test_decimal_values_come_back_as_decimals() -> None:
    nodes = query("$[*]", [Decimal("1.50"), 2])
    assert [type(n.value) for n in nodes] == [Decimal, int]
    assert str(nodes[0].value) == "1.50"
