"""The canonical report: its schema, its numbers against the record, audiences, determinism."""

from __future__ import annotations

import re
import socket
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from evals import make_plan, resume, start
from evals.reports import build_report, render_html, render_markdown
from evals.reports._format import json_text
from evals.reports._markdown import md
from evals.reports._values import OUTPUT_LIMIT, bounded
from records import CellResultRow, Store
from schema import __version__, validator
from schema.errors import NotFound, UsageError
from schema.jsontext import dumps, loads
from tests.evals._stable import RUN_VOLATILE, without
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import (
    GENERATED_YAML,
    HOLDOUT_CASES,
    PUBLIC_CASES,
    SECRET_CHECK,
    SECRET_EXPECTED,
    SECRET_IDS,
    SECRET_SUBJECTS,
    SECRET_TAG,
    SIMILAR_YAML,
    as_valid,
    escaped_forms,
    run_eval,
    setup,
)
from tests.evals.suites._make import SUITE_YAML


@pytest.fixture
def sqlite(sqlite_store: Store) -> Store:
    return sqlite_store


def _formats(report: dict[str, Any]) -> dict[str, str]:
    return {
        "json": dumps(report),
        "md": render_markdown(report),
        "html": render_html(report),
    }


# -- shape and numbers ------------------------------------------------------------------------


def test_the_report_is_valid_and_shows_the_records_numbers(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    eval_id = run_eval(store, tmp_path / "home")
    found = store.evals.current_record(AGENT_ID)
    assert found is not None
    record = found.to_json()
    for audience in ("author", "operator"):
        report = as_valid("report", build_report(store, eval_id, audience=audience))
        assert report["audience"] == audience
        assert report["eval"]["id"] == eval_id and report["eval"]["complete"] is True
        assert report["agent"] == {
            "id": AGENT_ID,
            "version": "1.0.0",
            "claimed_capabilities": ["ticket.classify"],
            "manifest": store.agents.manifest(AGENT_ID, "1.0.0"),
        }
        operator = audience == "operator"
        assert report["generated_by"]["holon"] == __version__
        assert (report["generated_by"]["python"] is not None) is operator
        assert (report["generated_by"]["platform"] is not None) is operator
        (suite,) = report["suites"]
        recorded = record["suites"]["tiny"]
        for split in ("public", "holdout"):
            mine, theirs = suite["splits"][split], recorded[split]
            assert (mine["passed"], mine["n"], mine["rate"], mine["ci95"]) == (
                theirs["passed"],
                theirs["total"],
                theirs["rate"],
                theirs["ci95"],
            )
            assert mine["missing"] == 0 and mine["cells"] == {"n": mine["cases"], "missing": 0}
        assert suite["score"] == recorded["score"]
        overfit = {k: v for k, v in suite["overfit"].items() if k not in ("detail", "advice")}
        assert overfit == recorded["overfit"]
        assert report["summary"]["eval_score"] == record["eval_score"]
        assert report["summary"]["eval_score_ci95"] == record["eval_score_ci95"]
        assert report["record"]["written"] is True
        # Every outcome code, zeros included; the scripted failures are where they belong.
        # An author's aggregates are of the public cells only (docs/integrity.md).
        everything = audience == "operator"
        assert report["summary"]["outcomes"] == {
            "n": 10 if everything else 7,
            "missing": 0,
            "counts": {
                "ok": 8 if everything else 5,
                "agent_error": 1,
                "timeout": 0,
                "invalid_response": 1,
                "cost_exceeded": 0,
                "unreachable": 0,
            },
        }
        # Graded n of N: the two public cells whose outcome was not ok are not graded.
        label = next(r for r in suite["checks"]["public"] if r["name"] == "label")
        assert (label["n"], label["missing"], label["passed"]) == (5, 2, 3)
        assert label["scope"] == "suite"
        cost = report["summary"]["cost"]
        # Failed calls cost nothing and say so: the total is priced, but not every cell.
        assert cost["sources"] == {"priced": 8 if everything else 5, "reported": 0, "none": 2}
        assert cost["source"] == "mixed"
        assert cost["n"] == (10 if everything else 7) and cost["missing"] == 0
        latency = report["summary"]["latency_ms"]
        assert latency["n"] == (10 if everything else 7)
        assert latency["p50"] <= latency["p95"] <= latency["max"]
        critical = next(r for r in suite["tags"]["public"] if r["tag"] == "critical")
        assert (critical["cases"], critical["passed"]) == (1, 1)


def test_public_cases_are_shown_in_full(sqlite: Store, tmp_path: Path) -> None:
    setup(sqlite, tmp_path)
    report = as_valid("report", build_report(sqlite, run_eval(sqlite, tmp_path / "home")))
    cases = {c["case_id"]: c for c in report["suites"][0]["cases"]}
    failed = cases["pub-fail"]["cells"][0]
    assert failed["output"] == {"label": "billing", "echo": "billing. Thanks."}
    label = next(c for c in failed["checks"] if c["name"] == "label")
    assert (label["expected"], label["actual"], label["passed"]) == (
        '"account"',
        '"billing"',
        False,
    )
    error = cases["pub-error"]["cells"][0]
    assert error["outcome"] == "agent_error" and error["checks"] is None
    assert error["http_status"] == 500 and "boom" in error["error"]
    assert len(cases["pub-pass-1"]["case_digest"]) == 64
    markdown = render_markdown(report)
    assert "pub-fail" in markdown and 'expected "account", actual "billing"' in markdown


# -- audiences ------------------------------------------------------------------------------


def test_authors_see_the_holdout_only_as_aggregates(sqlite: Store, tmp_path: Path) -> None:
    setup(sqlite, tmp_path)
    eval_id = run_eval(sqlite, tmp_path / "home")
    operator = as_valid("report", build_report(sqlite, eval_id, audience="operator"))
    # A digest's first 12 characters: Markdown's case table shows no more.
    digests = {
        c["case_digest"][:12] for c in operator["suites"][0]["cases"] if c["split"] == "holdout"
    }
    assert len(digests) == 3
    secrets = {*SECRET_IDS, *SECRET_SUBJECTS, *SECRET_EXPECTED, SECRET_CHECK, SECRET_TAG, *digests}
    # The operator's report has them all (Markdown details failures only, so
    # not the passing case's echoed subject): the author test below can fail.
    for name, text in _formats(operator).items():
        shown = secrets - {SECRET_SUBJECTS[0]} if name == "md" else secrets
        assert {secret for secret in shown if secret in text} == shown, name
    author = as_valid("report", build_report(sqlite, eval_id))  # the default audience
    assert author["audience"] == "author"
    for name, text in _formats(author).items():
        for secret in secrets:
            for form in escaped_forms(secret):
                assert form not in text, (name, secret)
        assert "epoch" not in text.lower(), name
        assert operator["eval"]["plan_digest"] not in text, name
    # ... yet the holdout's one coarse fact is there: its rate with its interval.
    (suite,) = author["suites"]
    holdout = suite["splits"]["holdout"]
    assert (holdout["cases"], holdout["n"], holdout["passed"]) == (3, 3, 2)
    assert holdout["ci95"] == operator["suites"][0]["splits"]["holdout"]["ci95"]
    # Nothing per check, tag, case or outcome of the holdout (docs/integrity.md).
    assert "holdout" not in suite["checks"]
    assert {c["split"] for c in suite["cases"]} == {"public"}
    assert "holdout" not in suite["tags"]
    assert set(suite["outcomes"]) == {"public"}
    # Digests over holdout content are keyed for authors; the spec digest is not.
    assert suite["suite_digest"].startswith("hmac-sha256:")
    assert operator["suites"][0]["suite_digest"] not in str(author)
    assert suite["digests"]["spec_digest"] == operator["suites"][0]["digests"]["spec_digest"]


def test_authors_never_see_a_generated_holdouts_epoch(sqlite: Store, tmp_path: Path) -> None:
    setup(sqlite, tmp_path, suite_yaml=GENERATED_YAML)
    for _ in range(3):
        sqlite.suites.rotate_holdout("tiny")
    eval_id = run_eval(sqlite, tmp_path / "home")
    operator = as_valid("report", build_report(sqlite, eval_id, audience="operator"))
    assert operator["suites"][0]["holdout_epoch"] == 3
    assert operator["record"]["value"]["holdout_epochs"] == {"tiny": 3}
    held = [c for c in operator["suites"][0]["cases"] if c["split"] == "holdout"]
    assert len(held) == 4 and all(c["case_id"].startswith("e3-") for c in held)
    author = as_valid("report", build_report(sqlite, eval_id, audience="author"))
    assert "holdout_epochs" not in author["record"]["value"]
    for name, text in _formats(author).items():
        assert "epoch" not in text.lower(), name
        # A case id starts a string ("e3-…"); a request id may hold e3- by chance.
        assert not any(f"{quote}e3-" in text for quote in ('"', ">", "| ", "`")), name
        for case in held:
            assert case["case_digest"] not in text, name


def test_an_unknown_audience_or_eval_is_refused(sqlite: Store) -> None:
    with pytest.raises(UsageError, match="unknown audience"):
        build_report(sqlite, "ev_01M8KYX2399MFPEAV9ECCJWA17", audience="public")
    with pytest.raises(NotFound, match="no eval"):
        build_report(sqlite, "ev_01M8KYX2399MFPEAV9ECCJWA17")


# -- from the database only -----------------------------------------------------------------


def test_rendering_twice_gives_the_same_bytes(sqlite: Store, tmp_path: Path) -> None:
    setup(sqlite, tmp_path)
    eval_id = run_eval(sqlite, tmp_path / "home")
    for audience in ("author", "operator"):
        report = build_report(sqlite, eval_id, audience=audience)
        first = _formats(report)
        second = _formats(build_report(sqlite, eval_id, audience=audience))
        assert first == second
        # Markdown and HTML need nothing but the JSON text.
        assert _formats(loads(first["json"])) == first
        # The only times in a report are the eval's and its record's, never "now".
        record = report["record"]["value"]
        known = {
            report["eval"]["created_at"],
            report["eval"]["finished_at"],
            record["evaluated_at"],
            record["eval_started_at"],
        }
        for text in first.values():
            assert set(re.findall(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", text)) <= {
                t.rstrip("Z") for t in known
            }


VOLATILE = RUN_VOLATILE | {"plan_digest"}


def _stable(value: Any) -> Any:
    """A report without what differs between two runs of one plan: ids, times, latencies."""
    return without(value, VOLATILE)


def test_a_resumed_eval_reports_like_one_that_never_crashed(sqlite: Store, tmp_path: Path) -> None:
    setup(sqlite, tmp_path)
    home = tmp_path / "home"
    reference = run_eval(sqlite, home)
    plan = make_plan(sqlite, AGENT_ID, home=home, concurrency=4)
    crashed = start(sqlite, plan)
    # A worker of a process that no longer exists held some cells when it died.
    dead = f"{socket.gethostname()}:999999:dead"
    assert len(sqlite.evals.claim(crashed.id, dead, 4, 3600)) == 4
    partial = as_valid("report", build_report(sqlite, crashed.id, audience="operator"))
    assert partial["eval"]["complete"] is False and partial["record"] is None
    assert partial["summary"]["cells"] == {"n": 0, "missing": 10}
    assert resume(sqlite, crashed.id, home=home).status == "done"
    for audience in ("author", "operator"):
        ours = _stable(build_report(sqlite, crashed.id, audience=audience))
        theirs = _stable(build_report(sqlite, reference, audience=audience))
        assert ours == theirs


def test_a_running_eval_reports_what_is_missing(sqlite: Store, tmp_path: Path) -> None:
    setup(sqlite, tmp_path)
    home = tmp_path / "home"
    info = start(sqlite, make_plan(sqlite, AGENT_ID, home=home))
    claimed = sqlite.evals.claim(info.id, "host:1:a", 3, 3600)
    rows = [
        CellResultRow(
            c.idx, c.fence, "ok", True, "0.0002", 12.34, 1, {"cost_source": "reported"}, {}, []
        )
        for c in claimed
    ]
    assert len(sqlite.evals.record(info.id, rows)) == 3
    report = as_valid("report", build_report(sqlite, info.id, audience="operator"))
    assert report["eval"]["status"] == "running" and report["eval"]["complete"] is False
    assert report["summary"]["cells"] == {"n": 3, "missing": 7}
    assert report["summary"]["cost"]["usd"] == "0.0006"
    assert report["summary"]["cost"]["source"] == "reported"
    assert str(report["summary"]["latency_ms"]["max"]) == "12.3"
    public = report["suites"][0]["splits"]["public"]
    assert (public["n"], public["missing"], public["passed"]) == (3, 4, 3)
    holdout = report["suites"][0]["splits"]["holdout"]
    assert (holdout["n"], holdout["missing"], holdout["rate"]) == (0, 3, None)
    assert report["record"] is None
    assert "No record: the eval has not finished." in render_markdown(report)


def test_long_agent_values_are_bounded() -> None:
    text = "A" * 5000
    cut = bounded({"pdf": text, "ok": "short"})
    assert cut["ok"] == "short"
    assert cut["pdf"].startswith("A" * 200 + "… [5000 characters in all, sha256 ")
    assert len(cut["pdf"]) < 300
    huge = bounded([f"{i:>500}" for i in range(100)])
    assert isinstance(huge, str) and huge.startswith("[output of ")
    assert len(dumps([f"{i:>500}" for i in range(100)])) > OUTPUT_LIMIT


def test_a_cancelled_eval_has_no_verdict(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    info = start(store, make_plan(store, AGENT_ID, home=tmp_path / "home"))
    claimed = store.evals.claim(info.id, "host:1:test", 3, 3600)
    store.evals.record(
        info.id,
        [
            CellResultRow(c.idx, c.fence, "ok", True, "0.0001", 5.0, 1, {}, {"label": "x"}, [])
            for c in claimed
        ],
    )
    store.evals.cancel(info.id)
    for audience in ("author", "operator"):
        report = build_report(store, info.id, audience=audience)
        assert not list(validator("report").iter_errors(loads(dumps(report))))
        summary = report["summary"]
        assert summary["meets_thresholds"] is None
        counted = "7 of 10 cells" if audience == "operator" else "4 of 7 public cells"
        assert summary["verdict_withheld"] == (
            f"the eval is cancelled with {counted} not recorded: no verdict, and no record "
            "(the plan was full)"
        )
        assert [s["meets_threshold"] for s in report["suites"]] == [None]
        for text in (render_markdown(report), render_html(report)):
            assert f"the eval is cancelled with {counted} not recorded" in text
            assert "no verdict: the eval is incomplete" in text
            assert "meets its threshold" not in text


def test_case_inputs_and_the_data_licence_in_every_format(store: Store, tmp_path: Path) -> None:
    from evals.reports import render_junit

    licensed = SUITE_YAML.replace(
        "title: A tiny suite\n", "title: A tiny suite\nlicense: CC-BY-4.0\n"
    )
    setup(store, tmp_path, suite_yaml=licensed)
    eval_id = run_eval(store, tmp_path / "home")
    for audience in ("author", "operator"):
        report = as_valid("report", build_report(store, eval_id, audience=audience))
        (suite,) = report["suites"]
        assert suite["license"] == "CC-BY-4.0"
        rows = {c["case_id"]: c for c in suite["cases"]}
        for source in PUBLIC_CASES:
            assert rows[source["id"]]["input"] == source["input"]
        if audience == "operator":  # holdout rows, with their inputs: the operator's only
            for source in HOLDOUT_CASES:
                assert rows[source["id"]]["input"] == source["input"]
        failing = rows["pub-fail"]["input"]["subject"]
        assert f"input: {md(json_text(rows['pub-fail']['input']))}" in render_markdown(report)
        assert failing in render_html(report)
        for text in (render_markdown(report), render_html(report), render_junit(report)):
            assert "CC-BY-4.0" in text


def test_a_suite_without_a_licence_says_so(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    report = build_report(store, run_eval(store, tmp_path / "home"))
    assert report["suites"][0]["license"] is None
    assert "data licence: not stated by the suite" in render_markdown(report)


def test_usage_and_grading_time_beside_latency(store: Store, tmp_path: Path) -> None:
    setup(store, tmp_path)
    eval_id = run_eval(store, tmp_path / "home")
    for audience in ("author", "operator"):
        report = as_valid("report", build_report(store, eval_id, audience=audience))
        (suite,) = report["suites"]
        cells = [cell for case in suite["cases"] for cell in case["cells"]]
        answered = [c for c in cells if c["outcome"] == "ok"]
        # The echo agent reports 10 input and 5 output tokens on every answer it gives.
        assert suite["usage"] == {
            "n": len(cells),
            "reported": len(answered),
            "coverage": round(Decimal(len(answered)) / len(cells), 4),
            "input_tokens": 10 * len(answered),
            "output_tokens": 5 * len(answered),
        }
        assert 0 < len(answered) < len(cells)  # some calls failed: coverage below 1
        # Every graded cell has its grading time; a cell never graded has none.
        assert all(c["grade_ms"] is not None for c in answered)
        assert all(c["grade_ms"] is None for c in cells if c["outcome"] != "ok")
        assert suite["grading_ms"]["n"] == len(answered) and suite["grading_ms"]["missing"] == 0
        text = render_markdown(report)
        assert f"reported by {len(answered)} of {len(cells)} recorded cells" in text
        assert "- grading: p50 " in text


def test_check_metrics_are_aggregated_per_case_with_an_interval(
    store: Store, tmp_path: Path
) -> None:
    from evals._stats import mean_interval, rounded

    setup(store, tmp_path, suite_yaml=SIMILAR_YAML)
    eval_id = run_eval(store, tmp_path / "home")
    for audience in ("author", "operator"):
        report = as_valid("report", build_report(store, eval_id, audience=audience))
        (suite,) = report["suites"]
        splits = ("public", "holdout") if audience == "operator" else ("public",)
        assert set(suite["checks"]) == set(splits)  # an author's holdout has no check rows
        for split in splits:
            row = next(r for r in suite["checks"][split] if r["name"] == "near label")
            block = row["metrics"]["similarity"]
            # Recomputed from the report's own cells: a case's value is its cells' mean.
            values = [
                Decimal(str(check["metrics"]["similarity"]))
                for case in suite["cases"]
                if case["split"] == split
                for cell in case["cells"]
                for check in cell["checks"] or []
                if check["name"] == "near label"
            ]
            assert block["n"] == len(values) == row["n"]  # one repetition: a cell a case
            mean, low, high = mean_interval(values)
            assert block["mean"] == rounded(mean)
            assert low is not None and high is not None
            assert block["ci95"] == [rounded(max(low, Decimal(0))), rounded(min(high, Decimal(1)))]
            assert 0 <= block["ci95"][0] <= block["mean"] <= block["ci95"][1] <= 1
            assert (block["min"], block["max"]) == (rounded(min(values)), rounded(max(values)))
        # A check with no metric has none.
        label = next(r for r in suite["checks"]["public"] if r["name"] == "label")
        assert label["metrics"] == {}
        assert "Check metrics" in render_markdown(report)
        assert "Check metrics" in render_html(report)


def test_the_t_interval_matches_the_textbook() -> None:
    from evals._stats import mean_interval, t95

    # n = 5: t(0.975, 4) = 2.776; mean 3, sd sqrt(2.5).
    mean, low, high = mean_interval([Decimal(v) for v in (1, 2, 3, 4, 5)])
    half = Decimal("2.776") * Decimal("2.5").sqrt() / Decimal(5).sqrt()
    assert mean == 3 and low is not None and high is not None
    assert abs(low - (3 - half)) < Decimal("1e-20") and abs(high - (3 + half)) < Decimal("1e-20")
    assert mean_interval([Decimal(7)]) == (7, None, None)
    assert (t95(1), t95(30), t95(35), t95(10**6)) == tuple(
        Decimal(t) for t in ("12.706", "2.042", "2.042", "1.962")
    )
    with pytest.raises(ValueError):
        t95(0)
