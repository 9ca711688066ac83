"""Metric declarations: each metric a predicate emits has one unit and one direction."""

from __future__ import annotations

import pytest

from evals.checks import DIRECTIONS, METRICS, Metric
from evals.checks._metrics import metric_table
from tests.evals._checks import doc, one

# A check of each predicate that emits metrics, with the document it grades.
EMITTING = [
    ("{path: $.output.a, similar: {to: abd, min: 0.1}}", doc({"a": "abc"})),
    ("{path: $.output.i, f1: {to: [{k: 1, v: 2}], key: k, fields: [v]}}", doc({"i": []})),
    ("{path: $.output.a, count: 1}", doc({"a": 1})),
    ("{path: $.output.a, exists: true}", doc({"a": 1})),
    ("{path: '$.output.n[*]', each: {gt: 0}, mostly: 0.5}", doc({"n": [1, -1, 2]})),
    ("{path: '$.output.n[*]', some: {gt: 0}}", doc({"n": [1]})),
]


@pytest.mark.parametrize(("check", "document"), EMITTING)
def test_every_emitted_metric_is_declared(check: str, document: dict[str, object]) -> None:
    result = one(check, document)
    assert result.metrics
    for name in result.metrics:
        assert name in METRICS, name


def test_the_table_holds_the_predicates_declarations() -> None:
    assert set(METRICS) == {
        "count",
        "f1",
        "nodes",
        "pass_rate",
        "passed",
        "precision",
        "recall",
        "similarity",
    }
    for metric in METRICS.values():
        assert metric.direction is None or metric.direction in DIRECTIONS
        assert metric.unit and metric.meaning
    # Shares are scored, sizes measured: higher similarity is better, more nodes is not.
    assert (METRICS["similarity"].direction, METRICS["similarity"].unit) == ("maximize", "ratio")
    assert (METRICS["count"].direction, METRICS["count"].unit) == (None, "count")
    assert METRICS["pass_rate"].is_share and not METRICS["nodes"].is_share


def test_a_name_declared_twice_differently_is_an_error() -> None:
    first = Metric("latency", "ms", "minimize", "time to answer")
    assert metric_table([first], [first]) == {"latency": first}  # shared: one declaration
    with pytest.raises(ValueError, match="declared twice"):
        metric_table([first], [Metric("latency", "s", "minimize", "time to answer")])


def test_a_direction_is_maximize_minimize_or_none() -> None:
    with pytest.raises(ValueError, match="direction"):
        Metric("x", "count", "higher", "x")  # type: ignore[arg-type]
