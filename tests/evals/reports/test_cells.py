"""What happened in a cell, in full: each attempt, the answer's metadata, checks that raised."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from evals.reports import build_report, render_html, render_markdown
from records import Store
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import as_valid, manifest, run_eval, suite_dir
from tests.evals.suites._make import case


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


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
    down["endpoint"] = f"http://127.0.0.1:{_closed_port()}/"
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
