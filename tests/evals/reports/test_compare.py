"""Comparing two real evals: pairing, unpaired cells, matching rules and the critical gate."""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from evals.reports import compare_evals, render_compare_html, render_compare_markdown
from evals.reports._data import CellData, load_eval
from evals.suites import install_suite
from records import Store
from schema.errors import NotFound, Refused
from schema.jsontext import dumps
from tests.evals.reports._setup import (
    HOLDOUT_CASES,
    PUBLIC_CASES,
    SECRET_IDS,
    as_valid,
    escaped_forms,
    manifest,
    run_eval,
    setup,
    suite_dir,
)
from tests.evals.suites._make import SUITE_YAML, case


@pytest.fixture
def store(sqlite_store: Store) -> Store:
    """The embedded store only: comparisons read the same rows on both backends."""
    return sqlite_store


def _two_versions(store: Store, tmp_path: Path) -> tuple[str, str]:
    setup(store, tmp_path)
    base = run_eval(store, tmp_path / "home")
    store.agents.register(manifest("2.0.0"))  # answers `flipped` to every `flip…` subject
    return base, run_eval(store, tmp_path / "home")


def test_a_critical_regression_fails_the_gate(store: Store, tmp_path: Path) -> None:
    base, candidate = _two_versions(store, tmp_path)
    operator = as_valid("compare", compare_evals(store, base, candidate, audience="operator"))
    assert operator["matched"] is True and operator["mismatches"] == []
    gate = operator["gate"]
    assert gate["passed"] is False
    assert gate["critical_regressions"] == {"public": 1, "holdout": 1}
    assert {c["case_id"] for c in gate["cases"]} == {"pub-critical", SECRET_IDS[2]}
    (suite,) = operator["suites"]
    public = suite["splits"]["public"]
    assert public["paired"] == {"cells": 7, "cases": 7}
    assert (public["improved"], public["regressed"], public["unchanged"]) == (0, 1, 6)
    assert str(public["rate_delta"]) == "-0.1429"  # 3/7 -> 2/7
    assert str(suite["score_delta"]) == "-0.1429"
    (regressed,) = [c for c in suite["cases"] if c["split"] == "public"]
    assert regressed["case_id"] == "pub-critical" and regressed["critical"] is True
    assert (regressed["base"]["score"], regressed["candidate"]["score"]) == (1, 0)
    label = next(r for r in suite["checks"] if r["split"] == "public" and r["name"] == "label")
    assert (label["base"]["passed"], label["candidate"]["passed"], label["base"]["n"]) == (3, 2, 5)
    assert str(label["delta"]) == "-0.2000"
    assert suite["unpaired"]["base"]["counts"] == {"public": 0, "holdout": 0}

    author = as_valid("compare", compare_evals(store, base, candidate))
    assert author["audience"] == "author"
    # The holdout counts for the gate, but an author sees only its pass/fail and
    # each side's rate: no case-level counts of the holdout (docs/integrity.md).
    assert author["gate"]["passed"] is False
    assert author["gate"]["critical_regressions"] == {"public": 1, "holdout": None}
    assert [c["case_id"] for c in author["gate"]["cases"]] == ["pub-critical"]
    held = author["suites"][0]["splits"]["holdout"]
    assert held["regressed"] is None and held["paired"] is None
    assert held["base"]["rate"] == operator["suites"][0]["splits"]["holdout"]["base"]["rate"]
    assert held["rate_delta"] == operator["suites"][0]["splits"]["holdout"]["rate_delta"]
    assert {c["split"] for c in author["suites"][0]["cases"]} == {"public"}
    for text in (dumps(author), render_compare_markdown(author)):
        for secret in SECRET_IDS:
            assert not any(form in text for form in escaped_forms(secret))
        for case_ in operator["suites"][0]["cases"]:
            if case_["split"] == "holdout":
                assert case_["case_digest"] not in text
    markdown = render_compare_markdown(operator)
    assert "## Gate: **FAILED**" in markdown and SECRET_IDS[2] in markdown
    page = render_compare_html(operator)
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page
    assert '<h2>Gate: <strong class="fail">FAILED</strong></h2>' in page
    assert SECRET_IDS[2] in page and "pub-critical" in page
    # An author's page holds no more of the holdout than the author's JSON.
    for secret in SECRET_IDS:
        assert not any(form in render_compare_html(author) for form in escaped_forms(secret))


def test_the_same_agent_twice_passes_the_gate(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    base = run_eval(store, tmp_path / "home")
    candidate = run_eval(store, tmp_path / "home")
    comparison = as_valid("compare", compare_evals(store, base, candidate, audience="operator"))
    assert comparison["gate"]["passed"] is True and comparison["matched"] is True
    (suite,) = comparison["suites"]
    assert suite["cases"] == [] and suite["score_delta"] == 0
    for split, cases in (("public", 7), ("holdout", 3)):
        assert suite["splits"][split]["paired"] == {"cells": cases, "cases": cases}
        assert suite["splits"][split]["unchanged"] == cases
    assert "## Gate: passed" in render_compare_markdown(comparison)


def test_unpaired_cells_are_listed_never_dropped(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    base = run_eval(store, tmp_path / "home")
    twice = run_eval(store, tmp_path / "home", repetitions=2)  # a narrowed eval: same suite
    # Scores of 1 run and of 2 are not the same measurement: refused, saying so.
    with pytest.raises(Refused, match="1 repetitions against 2") as refused:
        compare_evals(store, base, twice)
    (mismatch,) = refused.value.details["mismatches"]
    assert (mismatch["what"], mismatch["base"], mismatch["candidate"]) == ("repetitions", 1, 2)
    operator = as_valid(
        "compare", compare_evals(store, base, twice, audience="operator", allow_mismatch=True)
    )
    assert operator["matched"] is False
    unpaired = operator["suites"][0]["unpaired"]
    assert unpaired["base"]["counts"] == {"public": 0, "holdout": 0}
    assert unpaired["candidate"]["counts"] == {"public": 7, "holdout": 3}
    listed = unpaired["candidate"]["cells"]
    assert len(listed) == 10 and {c["repetition"] for c in listed} == {1}
    assert operator["suites"][0]["splits"]["public"]["paired"] == {"cells": 7, "cases": 7}
    author = as_valid("compare", compare_evals(store, base, twice, allow_mismatch=True))
    lone = author["suites"][0]["unpaired"]["candidate"]
    assert lone["counts"] == {"public": 7, "holdout": None}
    assert len(lone["cells"]) == 7 and {c["split"] for c in lone["cells"]} == {"public"}
    markdown = render_compare_markdown(author)
    assert "candidate: public 7, holdout not shown" in markdown


def test_cost_and_latency_deltas(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    base = run_eval(store, tmp_path / "home")
    candidate = run_eval(store, tmp_path / "home")
    operator = as_valid("compare", compare_evals(store, base, candidate, audience="operator"))
    (suite,) = operator["suites"]
    cost, latency = suite["cost"], suite["latency_ms"]
    b, c = cost["base"], cost["candidate"]
    assert b["sources"]["priced"] == c["sources"]["priced"] > 0 and b["n"] == c["n"] == 10
    assert b["sources"]["reported"] == c["sources"]["reported"] == 0
    assert Decimal(cost["usd_delta"]) == Decimal(c["usd"]) - Decimal(b["usd"])
    assert cost["delta_withheld"] is None
    assert latency["p50_delta"] == latency["candidate"]["p50"] - latency["base"]["p50"]
    # An author's: public cells only, as everything else of an author's comparison.
    author = as_valid("compare", compare_evals(store, base, candidate))
    assert author["suites"][0]["cost"]["base"]["n"] == 7
    assert author["suites"][0]["latency_ms"]["base"]["n"] == 7
    text = render_compare_markdown(author)
    assert f"- cost: base ${author['suites'][0]['cost']['base']['usd']} (" in text


def test_priced_and_reported_costs_are_never_subtracted(store: Store, tmp_path: Path) -> None:
    from evals.reports._aggregate import CellTotals
    from evals.reports._compare import _spend as spend_of_totals

    def _spend(base: list[CellData], candidate: list[CellData]) -> dict[str, Any]:
        return spend_of_totals(CellTotals.of(base), CellTotals.of(candidate))

    setup(store, tmp_path)
    base = run_eval(store, tmp_path / "home")
    data = load_eval(store, base)
    cells = data.cells_of("tiny")
    reported = [
        dataclasses.replace(c, cost_source="reported" if c.cost_source == "priced" else "none")
        for c in cells
    ]
    spend = _spend(cells, reported)
    assert spend["cost"]["usd_delta"] is None
    assert spend["cost"]["delta_withheld"] == "priced cost against reported: not the same measure"
    both = [dataclasses.replace(c, cost_source="reported") for c in cells[:1]] + list(cells[1:])
    assert _spend(both, both)["cost"]["delta_withheld"] == (
        "priced and reported cost against priced and reported: not the same measure"
    )
    fewer = _spend(cells, cells[1:])
    assert fewer["cost"]["usd_delta"] is None
    assert (
        fewer["cost"]["delta_withheld"] == f"{len(cells)} recorded cells against {len(cells) - 1}"
    )
    assert Decimal(_spend(cells, cells)["cost"]["usd_delta"]) == 0


def test_evals_of_different_holdout_epochs_are_refused(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    base = run_eval(store, tmp_path / "home")
    for _ in range(4):
        store.suites.rotate_holdout("tiny")
    candidate = run_eval(store, tmp_path / "home")
    with pytest.raises(Refused, match="holdouts are of different epochs") as refused:
        compare_evals(store, base, candidate)
    # An author learns that the epochs differ, never what they are.
    assert "4" not in str(refused.value).replace(base, "").replace(candidate, "")
    (mismatch,) = refused.value.details["mismatches"]
    assert mismatch["what"] == "holdout_epoch"
    assert (mismatch["base"], mismatch["candidate"]) == (None, None)
    with pytest.raises(Refused, match=r"\(0 and 4\)"):
        compare_evals(store, base, candidate, audience="operator")
    # With --allow-mismatch the comparison is made, and labelled.
    unmatched = as_valid("compare", compare_evals(store, base, candidate, allow_mismatch=True))
    assert unmatched["matched"] is False and len(unmatched["mismatches"]) == 1
    assert "**Unmatched**" in render_compare_markdown(unmatched)


def test_evals_of_different_suite_versions_are_refused(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    base = run_eval(store, tmp_path / "home")
    changed = SUITE_YAML.replace("\nversion: 1\n", "\nversion: 2\n")
    install_suite(
        store,
        suite_dir(
            tmp_path / "v2",
            public=[*PUBLIC_CASES, case("pub-new", "new", "new")],
            holdout=HOLDOUT_CASES,
            suite_yaml=changed,
        ),
        activate=True,
    )
    candidate = run_eval(store, tmp_path / "home")
    with pytest.raises(Refused, match="v1 digest .* against v2 digest") as refused:
        compare_evals(store, base, candidate)
    assert refused.value.hint is not None and "--allow-mismatch" in refused.value.hint
    unmatched = as_valid(
        "compare", compare_evals(store, base, candidate, audience="operator", allow_mismatch=True)
    )
    (suite,) = unmatched["suites"]
    # The new case has no partner: it is listed, not dropped.
    lone = suite["unpaired"]["candidate"]["cells"]
    assert [c["case_id"] for c in lone] == ["pub-new"]


def test_an_unknown_eval_is_not_found(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    base = run_eval(store, tmp_path / "home")
    with pytest.raises(NotFound):
        compare_evals(store, base, "ev_01M8KYX2399MFPEAV9ECCJWA17")
