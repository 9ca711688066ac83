"""The JUnit rendering of a report: one testcase a cell, failures, errors and skips as
JUnit means them, the suite's gate as a testcase, and nothing of the holdout for an author."""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree as ET

from evals import make_plan, start
from evals.reports import build_report, render_junit
from records import Store
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import (
    HOLDOUT_CASES,
    PUBLIC_CASES,
    SECRET_CHECK,
    SECRET_EXPECTED,
    SECRET_IDS,
    SECRET_SUBJECTS,
    run_eval,
    setup,
)


def _junit(store: Store, eval_id: str, audience: str) -> ET.Element:
    return ET.fromstring(render_junit(build_report(store, eval_id, audience=audience)))


def _results(suite: ET.Element) -> dict[str, str]:
    """testcase name -> passed | failure | error | skipped."""
    out = {}
    for case in suite.iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        out[case.get("name", "")] = kinds[0] if kinds else "passed"
    return out


def test_cells_become_testcases_by_what_happened(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    eval_id = run_eval(store, tmp_path / "home")
    report = build_report(store, eval_id, audience="operator")
    root = _junit(store, eval_id, "operator")
    (suite,) = root
    results = _results(suite)
    rows = {c["case_id"]: c["cells"][0] for c in report["suites"][0]["cases"]}
    assert set(results) == set(rows) | {"score"}
    for case_id, cell in rows.items():
        expected = (
            "passed" if cell["passed"] else ("failure" if cell["outcome"] == "ok" else "error")
        )
        assert results[case_id] == expected, (case_id, cell["outcome"], cell["passed"])
    assert {"passed", "failure", "error"} <= set(results.values())  # the echo agent does all three
    # The counts on each element add up, and the gate follows the suite's threshold.
    counts = {k: sum(1 for v in results.values() if v == k) for k in ("failure", "error")}
    assert suite.get("tests") == str(len(results)) == root.get("tests")
    assert int(suite.get("failures", "")) == counts["failure"]
    assert int(suite.get("errors", "")) == counts["error"]
    meets = report["suites"][0]["meets_threshold"]
    assert (results["score"] == "passed") is meets
    failed = next(c for c in suite.iter("testcase") if c.get("name") == "pub-fail")
    failure = failed.find("failure")
    assert failure is not None and "label" in failure.get("message", "")
    assert "expected" in (failure.text or "")


def test_an_author_junit_holds_no_holdout_case(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    eval_id = run_eval(store, tmp_path / "home")
    text = render_junit(build_report(store, eval_id, audience="author"))
    for secret in (*SECRET_IDS, *SECRET_SUBJECTS, *SECRET_EXPECTED, SECRET_CHECK):
        assert secret not in text
    (suite,) = ET.fromstring(text)
    assert set(_results(suite)) == {c["id"] for c in PUBLIC_CASES} | {"score"}
    operator = render_junit(build_report(store, eval_id, audience="operator"))
    assert all(c["id"] in operator for c in HOLDOUT_CASES)  # the operator's has them


def test_a_cancelled_evals_cells_are_skipped(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    info = start(store, make_plan(store, AGENT_ID, home=tmp_path / "home"))
    store.evals.cancel(info.id)
    (suite,) = _junit(store, info.id, "operator")
    results = _results(suite)
    assert set(results.values()) == {"skipped", "failure"}  # every cell; the gate fails
    assert results["score"] == "failure"
    assert int(suite.get("skipped", "")) == len(results) - 1
