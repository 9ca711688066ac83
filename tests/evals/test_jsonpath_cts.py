"""The whole JSONPath Compliance Test Suite (RFC 9535) through holon's path layer.

Documents are read with `schema.jsontext.loads`, so numbers are int/Decimal
as everywhere in holon: the filter comparisons must hold for Decimals too.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from evals.checks import compile_path, query
from evals.checks._values import json_equal
from schema import jsontext
from schema.errors import CheckError

CTS = Path(__file__).resolve().parents[1] / "data" / "jsonpath-cts.json"
CTS_SHA256 = "a85db53fba1f675be48b534baec5a754dc685ad08c550d8927f609c7708f365a"
TESTS: list[dict[str, Any]] = jsontext.loads(CTS.read_text("utf-8"))["tests"]


def test_the_suite_is_the_pinned_copy() -> None:
    assert hashlib.sha256(CTS.read_bytes()).hexdigest() == CTS_SHA256
    assert len(TESTS) == 703
    assert (
        (CTS.parent / "jsonpath-cts.LICENSE")
        .read_text("utf-8")
        .startswith("jsonpath-compliance-test-suite")
    )


@pytest.mark.parametrize("case", TESTS, ids=[f"{i:03d}" for i in range(len(TESTS))])
def test_compliance(case: dict[str, Any]) -> None:
    selector = case["selector"]
    if case.get("invalid_selector"):
        with pytest.raises(CheckError) as caught:
            compile_path(selector)
        assert caught.value.exit_code == 2
        assert "^" in caught.value.message  # a caret under the fault
        return
    nodes = query(selector, case["document"])
    values = [node.value for node in nodes]
    paths = [node.path for node in nodes]
    if "result" in case:
        alternatives = [(case["result"], case["result_paths"])]
    else:
        alternatives = list(zip(case["results"], case["results_paths"], strict=True))
    assert any(
        json_equal(values, expected) and paths == expected_paths
        for expected, expected_paths in alternatives
    ), (case["name"], selector, paths, alternatives[0][1])
    # Singular by syntax: a singular query matches at most one node.
    if compile_path(selector).singular:
        assert len(nodes) <= 1


def test_the_suite_exercises_both_evaluators() -> None:
    """Simple paths are walked by hand, others by the engine: the suite covers both."""
    valid = [case for case in TESTS if not case.get("invalid_selector")]
    walked = [case for case in valid if compile_path(case["selector"])._steps is not None]
    engine = [case for case in valid if compile_path(case["selector"])._steps is None]
    assert len(walked) > 100 and len(engine) > 100
