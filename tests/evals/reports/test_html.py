"""The HTML report: one self-contained page, every agent value escaped, a bar per suite split."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evals.reports import build_report, render_html, render_markdown
from evals.reports._format import percent
from records import Store, new_key, open_store
from tests.evals.reports._setup import PAYLOAD, PUBLIC_CASES, run_eval, setup
from tests.evals.suites._make import case
from tests.gateway.console._browser import chromium_or_skip

# An agent echoing a name that a right-to-left override turns around (`invoice`,
# U+202E, `txt.exe` shows as `invoiceexe.txt`), with a handler that would run a script.
BIDI = "invoice\u202etxt.exe <img src=x onerror=document.title='ran'>"


@pytest.fixture
def report(tmp_path: Path) -> Iterator[dict[str, Any]]:
    store: Store = open_store(
        f"sqlite:///{tmp_path / 'holon.db'}", secret_key=new_key(), auto_upgrade=True
    )
    try:
        setup(store, tmp_path)
        yield build_report(store, run_eval(store, tmp_path / "home"))
    finally:
        store.close()


@pytest.fixture
def bidi_report(tmp_path: Path) -> Iterator[dict[str, Any]]:
    store: Store = open_store(
        f"sqlite:///{tmp_path / 'holon.db'}", secret_key=new_key(), auto_upgrade=True
    )
    try:
        setup(store, tmp_path, public=[*PUBLIC_CASES, case("pub-bidi", BIDI, "other")])
        yield build_report(store, run_eval(store, tmp_path / "home"))
    finally:
        store.close()


def test_agent_output_is_escaped_and_nothing_runs(report: dict[str, Any]) -> None:
    page = render_html(report)
    # The payload came back from the agent (in its output and in a check's actual) ...
    xss = next(c for c in report["suites"][0]["cases"] if c["case_id"] == "pub-xss")
    assert xss["cells"][0]["output"]["label"] == PAYLOAD
    # ... and shows as text, never as a tag.
    assert html.escape(PAYLOAD) in page
    assert "<script" not in page.lower()
    assert PAYLOAD not in page
    # Self-contained: no external asset, no handler attribute, a CSP that forbids both.
    for banned in ("<link", "<img", "<iframe", "<object", "src=", "href=", "url(", "@import"):
        assert banned not in page.lower(), banned
    assert re.search(r"<[^>]*\son[a-z]+\s*=", page, re.IGNORECASE) is None
    assert "default-src 'none'" in html.unescape(page)
    assert page.startswith("<!DOCTYPE html>") and page.endswith("</html>\n")


def test_markdown_escapes_agent_output_too(report: dict[str, Any]) -> None:
    text = render_markdown(report)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<script" not in text.lower()


def test_each_suite_has_a_pass_fail_bar_per_split(report: dict[str, Any]) -> None:
    page = render_html(report)
    (suite,) = report["suites"]
    for split in ("public", "holdout"):
        block = suite["splits"][split]
        passed = percent(block["rate"])
        bar = re.search(
            rf'<div class="bar" [^>]*data-suite="tiny" data-split="{split}"[^>]*>'
            r'<div class="passed" style="width:([0-9.]+)%"></div>'
            r'<div class="failed" style="width:([0-9.]+)%"></div>',
            page,
        )
        assert bar is not None, split
        assert bar.group(1) == str(passed)
        assert float(bar.group(1)) + float(bar.group(2)) == pytest.approx(100)
        # The numbers beside the bar are the JSON's.
        assert f"{block['passed']}/{block['n']} cases, rate {block['rate']}" in page


def test_html_shows_the_jsons_numbers(report: dict[str, Any]) -> None:
    page = render_html(report)
    text = render_markdown(report)
    summary = report["summary"]
    for rendered in (page, text):
        assert str(summary["eval_score"]) in rendered
        assert str(summary["cost"]["usd"]) in rendered
        assert f"p95 {summary['latency_ms']['p95']} ms" in rendered
        for row in report["suites"][0]["checks"]["public"]:
            assert f"graded {row['n']} of {row['n'] + row['missing']}" in rendered


@pytest.mark.slow
def test_a_real_browser_renders_the_bars_and_shows_the_payload_as_text(
    bidi_report: dict[str, Any], tmp_path: Path
) -> None:
    chromium = chromium_or_skip()
    page = tmp_path / "report.html"
    page.write_text(render_html(bidi_report), encoding="utf-8")
    profile = tmp_path / "profile"
    base = [
        str(chromium),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
    ]
    shutil.rmtree(profile, ignore_errors=True)
    dom = subprocess.run(
        [*base, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    ).stdout
    # The DOM the browser built: the bars are elements, the payload is text, no script ran.
    assert dom.count('class="bar"') == 2
    assert 'data-split="public"' in dom and 'data-split="holdout"' in dom
    assert html.escape(PAYLOAD) in dom
    assert "<script" not in dom.lower()
    # The override is an element with its escape as text, never the character itself;
    # the handler is text too (no <img> element), so the title is still the report's.
    assert 'invoice<span class="esc">\\u202e</span>txt.exe &lt;img src=x onerror=' in dom
    assert "\u202e" not in dom
    assert "<img" not in dom.lower() and "<title>ran</title>" not in dom
    assert f"<title>Eval report: {bidi_report['agent']['id']}" in dom
    screenshot = tmp_path / "report.png"
    subprocess.run(
        [*base, "--window-size=1200,1600", f"--screenshot={screenshot}", page.as_uri()],
        capture_output=True,
        timeout=90,
        check=True,
    )
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
