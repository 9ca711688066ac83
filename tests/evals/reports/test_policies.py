"""Every report states the policies that judged it, and each metric's unit and direction."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest

from evals import _evidence, _overfit, _scores
from evals._import import import_report
from evals.checks import METRICS
from evals.reports import (
    _cache,
    _policies,
    build_report,
    render_html,
    render_json,
    render_junit,
    render_markdown,
)
from evals.reports._cache import report_key
from evals.reports._gate import GATE_DROP, GATE_RULE
from records import Store
from schema.errors import InputError
from schema.jsontext import dumps, loads
from tests.evals.reports._setup import SIMILAR_YAML, as_valid, run_eval, setup


def _exact(value: object) -> Fraction:
    return Fraction(Decimal(str(value)))


def test_every_report_states_its_policies(sqlite_store: Store, tmp_path: Path) -> None:
    setup(sqlite_store, tmp_path, suite_yaml=SIMILAR_YAML)
    eval_id = run_eval(sqlite_store, tmp_path / "home")
    for audience in ("author", "operator"):
        report = as_valid("report", build_report(sqlite_store, eval_id, audience=audience))
        policies = report["policies"]
        (suite,) = report["suites"]
        # Read from where the code that applies each rule declares it.
        assert policies["thresholds"] == {
            "rule": _scores.THRESHOLD_RULE,
            "suites": [{"id": suite["id"], "threshold": suite["settings"]["threshold"]}],
        }
        assert policies["overfit"]["rule"] == _overfit.OVERFIT_RULE
        assert _exact(policies["overfit"]["alpha"]) == _overfit.ALPHA
        assert policies["overfit"]["suites"] == [
            {"id": suite["id"], "delta": suite["settings"]["overfit_delta"]}
        ]
        assert policies["lower_bound"]["rule"] == _evidence.LOWER_BOUND_RULE
        assert "eval_score_lower" in policies["lower_bound"]["rule"]
        assert "alpha_k" in policies["lower_bound"]["rule"]
        assert _exact(policies["lower_bound"]["alpha"]) == _evidence.ALPHA
        assert policies["compare_gate"] == {"rule": GATE_RULE, "drop": Decimal("0.5")}
        assert _exact(policies["compare_gate"]["drop"]) == GATE_DROP
        rules = [
            _scores.THRESHOLD_RULE,
            _overfit.OVERFIT_RULE,
            _evidence.LOWER_BOUND_RULE,
            GATE_RULE,
        ]
        for render in (render_markdown, render_html, render_junit):
            text = render(report)
            for rule in rules:
                # HTML and XML escape an apostrophe; the words are there either way.
                assert rule.split("'")[0] in text, (render.__name__, rule)
            assert f"{suite['settings']['threshold']}: " in text
        assert "## Policies" in render_markdown(report)
        assert '<section id="policies">' in render_html(report)
        assert 'name="policy compare gate"' in render_junit(report)


def test_every_format_shows_a_metrics_unit_and_direction(
    sqlite_store: Store, tmp_path: Path
) -> None:
    setup(sqlite_store, tmp_path, suite_yaml=SIMILAR_YAML)
    eval_id = run_eval(sqlite_store, tmp_path / "home")
    report = as_valid("report", build_report(sqlite_store, eval_id, audience="operator"))
    (suite,) = report["suites"]
    declared = METRICS["similarity"]
    for split in ("public", "holdout"):
        row = next(r for r in suite["checks"][split] if r["name"] == "near label")
        block = row["metrics"]["similarity"]
        assert (block["direction"], block["unit"]) == (declared.direction, declared.unit)
    markdown, html, junit = render_markdown(report), render_html(report), render_junit(report)
    assert "| public | near label | similarity | ratio | maximize |" in markdown
    assert "<td>similarity</td><td>ratio</td><td>maximize</td>" in html
    assert 'name="metric public near label similarity"' in junit
    assert "ratio, maximize" in junit


def test_a_kept_report_is_keyed_by_its_policies_and_metrics(
    sqlite_store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A text kept under one statement of the rules must not be served under another.
    setup(sqlite_store, tmp_path)
    eval_id = run_eval(sqlite_store, tmp_path / "home")
    key = report_key(sqlite_store, eval_id, "operator", "json")
    assert key is not None
    monkeypatch.setattr(_policies, "GATE_RULE", "fails when anything moved")
    changed = report_key(sqlite_store, eval_id, "operator", "json")
    monkeypatch.undo()
    assert changed != key
    renamed = {**METRICS, "count": dataclasses.replace(METRICS["count"], direction="minimize")}
    monkeypatch.setattr(_cache, "METRICS", renamed)
    assert report_key(sqlite_store, eval_id, "operator", "json") not in (key, changed)


def test_a_report_without_policies_or_declarations_still_imports(
    sqlite_store: Store, tmp_path: Path
) -> None:
    # They say what rendered the report, not what was measured: a report written
    # without them is checked on its numbers, as one written with them.
    setup(sqlite_store, tmp_path, suite_yaml=SIMILAR_YAML)
    eval_id = run_eval(sqlite_store, tmp_path / "home")
    report = loads(render_json(build_report(sqlite_store, eval_id, audience="operator")))
    assert isinstance(report, dict)
    del report["policies"]
    for row in report["suites"][0]["checks"]["public"]:
        for block in row["metrics"].values():
            del block["unit"], block["direction"]
    as_valid("report", report)
    info = import_report(sqlite_store, dumps(report).encode(), home=tmp_path / "home")
    again = build_report(sqlite_store, info.id, audience="operator")
    assert again["policies"]["compare_gate"]["rule"] == GATE_RULE
    # A derived number next to them still has to recompute.
    near = next(r for r in report["suites"][0]["checks"]["public"] if r["name"] == "near label")
    near["metrics"]["similarity"]["mean"] = 0.99
    with pytest.raises(InputError, match="does not recompute"):
        import_report(sqlite_store, dumps(report).encode(), home=tmp_path / "home")
