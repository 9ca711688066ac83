"""A check metric's change in a comparison counts by its declared direction."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from evals.checks import METRICS
from evals.reports import compare_evals, render_compare_html, render_compare_markdown
from evals.reports._metric_changes import change_counts, metric_change, metric_deltas
from records import Store
from tests.evals.reports._setup import SIMILAR_YAML, as_valid, manifest, run_eval, setup


def _row(**means: tuple[str | None, str]) -> dict[str, Any]:
    """A compare side's check row: metric name -> (direction, mean)."""
    return {
        "metrics": {
            name: {"direction": direction, "unit": "ms", "n": 3, "mean": Decimal(mean)}
            for name, (direction, mean) in means.items()
        }
    }


@pytest.mark.parametrize(
    ("direction", "delta", "change"),
    [
        ("minimize", "-12.5", "improved"),
        ("minimize", "3", "regressed"),
        ("maximize", "-0.1", "regressed"),
        ("maximize", "0.1", "improved"),
        ("maximize", "0", "unchanged"),
        (None, "2", "no direction"),
        (None, "0", "unchanged"),
        ("maximize", None, None),
    ],
)
def test_a_change_counts_by_direction(
    direction: str | None, delta: str | None, change: str
) -> None:
    assert metric_change(direction, None if delta is None else Decimal(delta)) == change


def test_a_minimize_metric_going_down_is_an_improvement() -> None:
    base = _row(latency=("minimize", "120.0"), recall=("maximize", "0.9"), nodes=(None, "4"))
    candidate = _row(latency=("minimize", "80.5"), recall=("maximize", "0.85"), nodes=(None, "6"))
    deltas = metric_deltas(base, candidate)
    assert deltas["latency"] == {
        "unit": "ms",
        "direction": "minimize",
        "base": Decimal("120.0"),
        "candidate": Decimal("80.5"),
        "delta": Decimal("-39.5"),
        "change": "improved",
    }
    assert deltas["recall"]["change"] == "regressed"
    assert deltas["nodes"]["change"] == "no direction"
    row = {"metrics": deltas}
    assert change_counts([row]) == {
        "improved": 1,
        "regressed": 1,
        "unchanged": 0,
        "no direction": 1,
    }
    # A metric on one side only has no change to count.
    lone = metric_deltas(base, _row())
    assert lone["latency"]["candidate"] is None and lone["latency"]["change"] is None


def test_compare_calls_a_similarity_drop_a_regression(sqlite_store: Store, tmp_path: Path) -> None:
    store = sqlite_store
    setup(store, tmp_path, suite_yaml=SIMILAR_YAML)
    base = run_eval(store, tmp_path / "home")
    store.agents.register(manifest("2.0.0"))  # answers `flipped` to every `flip…` subject
    candidate = run_eval(store, tmp_path / "home")
    for audience in ("author", "operator"):
        comparison = as_valid("compare", compare_evals(store, base, candidate, audience=audience))
        (suite,) = comparison["suites"]
        near = next(
            r for r in suite["checks"] if r["split"] == "public" and r["name"] == "near label"
        )
        similarity = near["metrics"]["similarity"]
        declared = METRICS["similarity"]
        assert (similarity["direction"], similarity["unit"]) == (declared.direction, declared.unit)
        assert similarity["delta"] < 0
        assert similarity["change"] == "regressed"
        assert suite["metric_changes"]["regressed"] >= 1
        # A check with no metric has nothing to count.
        label = next(r for r in suite["checks"] if r["name"] == "label")
        assert label["metrics"] == {}
        for text in (render_compare_markdown(comparison), render_compare_html(comparison)):
            assert "Check metrics" in text
            assert "regressed" in text and "maximize" in text and "ratio" in text
