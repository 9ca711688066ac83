"""What happened in a cell, in full: each attempt, the answer's metadata, checks that raised."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from evals.reports import build_report, render_html, render_junit, render_markdown
from records import Store
from schema.jsontext import dumps
from tests._servers import free_port
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import as_valid, manifest, run_eval, suite_dir
from tests.evals.suites._make import case


def _cells(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [cell for suite in report["suites"] for c in suite["cases"] for cell in c["cells"]]


def test_a_retried_cell_lists_each_attempt_under_its_own_span(store: Store, tmp_path: Path) -> None:
    from evals.suites import install_suite

    install_suite(
        store,
        suite_dir(
            tmp_path / "suite-src",
            public=[case("pub-1", "account", "account")],
            holdout=[case("hold-1", "billing", "billing")],
        ),
    )
    # Nothing listens: every attempt is `unreachable`, and is retried twice.
    down = {**manifest(), "protocol": "holon-http"}
    down["endpoint"] = f"http://127.0.0.1:{free_port()}/"
    store.agents.register(down)
    eval_id = run_eval(store, tmp_path / "home", retries=2)
    report = as_valid("report", build_report(store, eval_id, audience="operator"))
    cells = _cells(report)
    assert len(cells) == 2
    for cell in cells:
        assert cell["outcome"] == "unreachable" and cell["attempts"] == 3
        log = cell["attempt_log"]
        assert [a["number"] for a in log] == [1, 2, 3]
        assert [a["outcome"] for a in log] == ["unreachable"] * 3
        assert all(a["error"] and a["latency_ms"] is not None for a in log)
        assert len({a["span_id"] for a in log}) == 3  # one request id, three spans
        assert all(len(a["span_id"]) == 16 for a in log)
        started = [a["started_at"] for a in log]
        assert started == sorted(started) and all(s.endswith("Z") for s in started)
    spans = {a["span_id"] for cell in cells for a in cell["attempt_log"]}
    assert len(spans) == 6 and len({c["request_id"] for c in cells}) == 2
    html = render_html(report)
    markdown = render_markdown(report)
    for span in spans:
        assert span in html and span in markdown
    # An author sees the public cell's attempts; the holdout's cell not at all.
    author = as_valid("report", build_report(store, eval_id, audience="author"))
    (public,) = _cells(author)
    assert len(public["attempt_log"]) == 3
    held = next(c for c in cells if c["request_id"] != public["request_id"])
    assert not {a["span_id"] for a in held["attempt_log"]} & {
        a["span_id"] for a in public["attempt_log"]
    }
    shown = render_html(author) + render_markdown(author)
    assert all(a["span_id"] not in shown for a in held["attempt_log"])
    assert AGENT_ID in shown


# -- the answer's metadata ----------------------------------------------------------------------

HOSTILE_NOTE = "meta <script>alert(1)</script> \u202eexe.txt | `x`"
HOLD_NOTE = "metaholdnotesecret"


def _metadata_eval(store: Store, root: Path) -> str:
    from evals.suites import install_suite

    public = [
        case("pub-meta", HOSTILE_NOTE, "other"),  # fails: the label echoes the subject
        case("pub-big", "metabig", "metabig"),
        case("pub-plain", "account", "account"),
    ]
    holdout = [case("hold-meta", HOLD_NOTE, "other")]
    install_suite(store, suite_dir(root / "suite-src", public=public, holdout=holdout))
    store.agents.register(manifest())
    return run_eval(store, root / "home")


def _by_case(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["case_id"]: c["cells"][0] for s in report["suites"] for c in s["cases"]}


def test_an_answers_metadata_is_kept_and_shown_to_the_operator(
    store: Store, tmp_path: Path
) -> None:
    eval_id = _metadata_eval(store, tmp_path)
    report = as_valid("report", build_report(store, eval_id, audience="operator"))
    cells = _by_case(report)
    body = f"{HOSTILE_NOTE}. Thanks."
    assert cells["pub-meta"]["metadata"] == {"model": "echo-1", "note": [body]}
    assert cells["hold-meta"]["metadata"] == {"model": "echo-1", "note": [f"{HOLD_NOTE}. Thanks."]}
    assert cells["pub-plain"]["metadata"] is None  # none sent, none shown
    # Over 4 KiB of JSON: its size, digest and head, never the whole.
    big = cells["pub-big"]["metadata"]["$truncated"]
    assert big["bytes"] > 4096 and len(big["sha256"]) == 64 and len(big["head"]) == 512
    stored = {c.case_id: c.outcome for c in store.evals.cells(eval_id)}
    assert len(dumps(stored["pub-big"]["metadata"])) < 1024  # the store keeps it bounded too
    # Escaped where rendered: no tag, no bidi override, no table cell broken.
    page, markdown = render_html(report), render_markdown(report)
    assert "<p>metadata</p>" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script" not in page.lower()
    assert '<span class="esc">\\u202e</span>exe.txt' in page
    assert HOLD_NOTE in page
    assert "  - metadata: " in markdown and "\\u202eexe.txt" in markdown
    assert "&lt;script&gt;" in markdown and "\\| \\`x\\`" in markdown
    assert "\u202e" not in page + markdown


def test_an_author_sees_the_metadata_of_public_cells_only(store: Store, tmp_path: Path) -> None:
    eval_id = _metadata_eval(store, tmp_path)
    author = as_valid("report", build_report(store, eval_id, audience="author"))
    cells = _by_case(author)
    assert "hold-meta" not in cells
    assert cells["pub-meta"]["metadata"]["model"] == "echo-1"
    shown = dumps(author) + render_html(author) + render_markdown(author)
    assert HOLD_NOTE not in shown and "metaholdnote" not in shown


# -- checks that raised ---------------------------------------------------------------------------

RAISING = "raisingcheck"


def test_a_check_that_raised_counts_as_an_error_not_a_failure(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from evals.checks._structure import CompiledCheck
    from evals.suites import install_suite

    graded = CompiledCheck.grade

    def grade(self: CompiledCheck, context: Any) -> Any:
        if self.name == RAISING:  # a grader bug: nothing the agent answered
            raise KeyError("\x1b[2Jcleared")
        return graded(self, context)

    monkeypatch.setattr(CompiledCheck, "grade", grade)
    raising = {"name": RAISING, "path": "$.output.label", "equals": "account"}
    public = [
        case("pub-raises", "account", "account", checks=[raising]),
        case("pub-fails", "billing", "account"),
        case("pub-passes", "account", "account"),
    ]
    holdout = [case("hold-1", "account", "account")]
    install_suite(store, suite_dir(tmp_path / "suite-src", public=public, holdout=holdout))
    store.agents.register(manifest())
    with caplog.at_level(logging.WARNING, logger="evals.checks._grade"):
        eval_id = run_eval(store, tmp_path / "home")
    # The warning names the check; the exception's text is escaped for a terminal.
    (warning,) = [r.getMessage() for r in caplog.records if RAISING in r.getMessage()]
    assert "\x1b" not in warning and "\\x1b[2Jcleared" in warning
    for audience in ("operator", "author"):
        report = as_valid("report", build_report(store, eval_id, audience=audience))
        assert report["summary"]["errors"] == 1
        assert report["summary"]["passed_cells"] == (2 if audience == "operator" else 1)
        (suite,) = report["suites"]
        rows = {r["name"]: r for r in suite["checks"]["public"]}
        assert rows[RAISING]["errors"] == 1 and rows[RAISING]["passed"] == 0
        assert rows[RAISING]["n"] == 1  # graded: it is an error, not a missing cell
        assert all(r["errors"] == 0 for name, r in rows.items() if name != RAISING)
        cells = _by_case(report)
        assert cells["pub-raises"]["passed"] is False  # still not passed
        (result,) = [c for c in cells["pub-raises"]["checks"] if c["name"] == RAISING]
        assert result["status"] == "error" and "KeyError" in result["detail"]
        assert cells["pub-fails"]["passed"] is False
        assert all(c["status"] != "error" for c in cells["pub-fails"]["checks"])
        junit = render_junit(report)
        # pub-fails' failure and the suite's score line (below its threshold); an error beside.
        assert junit.count('type="check_error"') == 1 and junit.count("<failure") == 2
        assert "1 with a check that raised" in render_markdown(report)
        assert "1 with a check that raised" in render_html(report)
