"""`quick_validity` may only ever say "valid" where jsonschema says valid too.

Generated schemas over every keyword it understands, and generated documents
(Decimal numbers included, as holon parses them): whenever the fast path
answers True, the full validator must accept. It may answer False freely
(the full validator then decides and explains).
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schema._registry import make_validator, quick_validity
from schema.documents import load_document
from tests._hypothesis import derandomized

TYPES = ["null", "boolean", "integer", "number", "string", "array", "object"]
NAMES = ["a", "b", "label", "x"]

leaf_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.decimals(min_value=-5, max_value=5, places=2),
    st.sampled_from([Decimal("2.0"), Decimal("1E+1"), Decimal("-0")]),
    st.sampled_from(["", "a", "b", "label", "ééé", "a\n", " a"]),
)
documents = st.recursive(
    leaf_values,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(NAMES), inner, max_size=4)
    ),
    max_leaves=10,
)


def _schemas() -> st.SearchStrategy[Any]:
    def extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        keywords = st.fixed_dictionaries(
            {},
            optional={
                "type": st.one_of(
                    st.sampled_from(TYPES), st.lists(st.sampled_from(TYPES), min_size=1, max_size=3)
                ),
                "enum": st.lists(leaf_values, min_size=1, max_size=3),
                "const": leaf_values,
                "properties": st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
                "required": st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
                "additionalProperties": st.one_of(st.booleans(), inner),
                "items": inner,
                "minItems": st.integers(0, 3),
                "maxItems": st.integers(0, 3),
                "minLength": st.integers(0, 3),
                "maxLength": st.integers(0, 3),
                "minimum": st.one_of(st.integers(-3, 3), st.decimals(-3, 3, places=1)),
                "maximum": st.one_of(st.integers(-3, 3), st.decimals(-3, 3, places=1)),
                "pattern": st.sampled_from(["^a", "a$", "^\\S(.*\\S)?$", "é", "^$"]),
                "uniqueItems": st.booleans(),
                "description": st.just("annotations never invalidate"),
            },
        )
        return keywords

    return st.recursive(st.booleans() | st.just({}), extend, max_leaves=6)


# The fast tier tries 150 schemas; the slow tier the full 600.
@pytest.mark.parametrize("examples", [150, pytest.param(600, marks=pytest.mark.slow)])
def test_quick_true_implies_valid(examples: int) -> None:
    @derandomized(examples)
    @given(schema=_schemas(), values=st.lists(documents, min_size=1, max_size=6))
    def check(schema: Any, values: list[Any]) -> None:
        quick = quick_validity(schema)
        if quick is None:
            return
        validator = make_validator(
            schema if isinstance(schema, dict) else {"not": {}} if not schema else {}
        )
        for value in values:
            if quick(value):
                assert validator.is_valid(value), (schema, value)

    check()


def test_the_shipped_output_schemas_get_the_fast_path() -> None:
    root = Path(__file__).resolve().parents[2]
    schemas = sorted((root / "examples" / "suites").glob("*/schemas/output*.json"))
    assert schemas
    covered = [p for p in schemas if quick_validity(load_document(p).value) is not None]
    assert covered, "no shipped output schema uses the fast path"


def test_the_case_schema_gets_the_fast_path() -> None:
    from schema import load_schema

    quick = quick_validity(load_schema("case"))
    assert quick is not None
    case = {"id": "c-1", "input": {}, "expected": None, "tags": ["a", "b"]}
    assert quick(case)
    # Not known valid: the full validator decides (and explains).
    assert not quick({**case, "id": "c-1\n"})  # `$` is the end of the text
    assert not quick({**case, "tags": ["a", "a"]})
    assert not quick({**case, "extra": 1})


def test_unknown_keywords_get_no_fast_path() -> None:
    assert quick_validity({"format": "date"}) is None
    assert quick_validity({"uniqueItems": 1}) is None
    assert quick_validity({"$ref": "#/x"}) is None
    assert quick_validity({"anyOf": [{}]}) is None
    assert quick_validity({"type": "string"}) is not None
