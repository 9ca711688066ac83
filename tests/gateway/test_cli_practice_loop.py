"""The author's loop around `holon test`: --cache, --failed, --html and --watch."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests._servers import serve
from tests.gateway._cli import CLI
from tests.gateway._counting import Counting, counting_agent

ROOT = Path(__file__).resolve().parents[2]
TICKETS = ROOT / "examples" / "suites" / "ticket-classify"
TRIAGE = "asgi:examples.agents.ticket_triage:app"


@pytest.fixture
def agent() -> Iterator[tuple[Counting, str]]:
    with counting_agent() as served:
        yield served


def _copy_suite(tmp_path: Path) -> Path:
    target = tmp_path / "ticket-classify"
    shutil.copytree(TICKETS, target)
    return target


def _verdicts(body: dict[str, Any]) -> list[tuple[str, bool]]:
    return [(c["id"], c["passed"]) for c in body["cases"]]


def test_cache_answers_a_second_run_without_calling_the_agent(
    cli: CLI, agent: tuple[Counting, str], tmp_path: Path
) -> None:
    app, url = agent
    first = cli("test", str(TICKETS), "--endpoint", url, "--cache", "--json")
    assert first.code in (0, 1), first.stderr
    cells = first.json()["summary"]["cells"]
    assert app.calls == cells and first.json()["summary"]["cached"] == 0
    second = cli("test", str(TICKETS), "--endpoint", url, "--cache", "--json")
    assert app.calls == cells  # not one call more
    body = second.json()
    assert body["summary"]["cached"] == cells and second.code == first.code
    assert _verdicts(body) == _verdicts(first.json())
    assert all(cell["cached"] for case in body["cases"] for cell in case["cells"])
    assert body["summary"]["cost_usd"] == "0"  # answers kept are not paid for again
    human = cli("test", str(TICKETS), "--endpoint", url, "--cache")
    assert f"({cells} from the cache)" in human.stdout and app.calls == cells
    # Opt-in: without --cache the agent is asked, and nothing says cached.
    fresh = cli("test", str(TICKETS), "--endpoint", url, "--json")
    assert app.calls == 2 * cells and fresh.json()["summary"]["cached"] == 0


def test_the_cache_key_is_the_agent_and_the_request(
    cli: CLI, agent: tuple[Counting, str], tmp_path: Path
) -> None:
    app, url = agent
    one = ["--case", "tc-001"]
    cli("test", str(TICKETS), "--endpoint", url, "--cache", *one)
    assert app.calls == 1
    # The same agent at another address is another identity: asked again.
    with serve(app) as other:
        cli("test", str(TICKETS), "--endpoint", other + "/", "--cache", *one)
    assert app.calls == 2
    # Another input (the case file edited) is another request.
    suite = _copy_suite(tmp_path)
    cases = suite / "cases" / "public.jsonl"
    first = json.loads(cases.read_text().splitlines()[0])
    first["input"]["subject"] += " (resent)"
    rest = cases.read_text().splitlines()[1:]
    cases.write_text("\n".join([json.dumps(first), *rest]) + "\n")
    cli("test", str(suite), "--endpoint", url, "--cache", *one)
    assert app.calls == 3
    cli("test", str(suite), "--endpoint", url, "--cache", *one)
    assert app.calls == 3


def test_a_corrupt_or_forged_cache_entry_is_a_miss(
    cli: CLI, agent: tuple[Counting, str], tmp_path: Path
) -> None:
    app, url = agent
    one = ["--case", "tc-001", "--json"]
    kept = cli("test", str(TICKETS), "--endpoint", url, "--cache", *one).json()
    entries = list((tmp_path / "home" / "cache" / "responses").rglob("*.json"))
    assert len(entries) == 1
    entry = json.loads(entries[0].read_text())
    # A changed answer without its checksum is not served.
    entry["outcome"]["output"] = {"label": "forged", "priority": "low", "product": "general"}
    entries[0].write_text(json.dumps(entry))
    again = cli("test", str(TICKETS), "--endpoint", url, "--cache", *one).json()
    assert app.calls == 2 and again["summary"]["cached"] == 0
    assert _verdicts(again) == _verdicts(kept)
    entries[0].write_text("{not json")
    cli("test", str(TICKETS), "--endpoint", url, "--cache", *one)
    assert app.calls == 3
    # Each miss rewrote the entry: the next run is served from it.
    assert (
        cli("test", str(TICKETS), "--endpoint", url, "--cache", *one).json()["summary"]["cached"]
        == 1
    )
    assert app.calls == 3


def test_failures_are_not_cached(cli: CLI, tmp_path: Path) -> None:
    args = ("test", str(TICKETS), "--endpoint", "http://127.0.0.1:9/", "--cache", "--case")
    assert cli(*args, "tc-001").code == 3
    assert not list((tmp_path / "home" / "cache" / "responses").rglob("*.json"))


def test_failed_runs_the_last_failures_again(cli: CLI, tmp_path: Path) -> None:
    suite = _copy_suite(tmp_path)
    missing = cli("test", str(suite), "--endpoint", TRIAGE, "--failed", "--json")
    assert missing.code == 2 and "no earlier run" in missing.json()["error"]["message"]
    full = cli("test", str(suite), "--endpoint", TRIAGE, "--json").json()
    failed = [c["id"] for c in full["cases"] if not c["passed"]]
    assert len(failed) >= 2  # the example agent gets some tickets wrong
    again = cli("test", str(suite), "--endpoint", TRIAGE, "--failed", "--json")
    assert [c["id"] for c in again.json()["cases"]] == failed
    assert again.code == 1 and not any(c["passed"] for c in again.json()["cases"])
    # Make the first failure pass (expect what the agent answers): the list shrinks.
    answer = next(c for c in again.json()["cases"] if c["id"] == failed[0])["cells"][0]["output"]
    cases = suite / "cases" / "public.jsonl"
    lines = [json.loads(line) for line in cases.read_text().splitlines() if line.strip()]
    for line in lines:
        if line["id"] == failed[0]:
            line["expected"] = answer
    cases.write_text("".join(json.dumps(line) + "\n" for line in lines))
    fixed = cli("test", str(suite), "--endpoint", TRIAGE, "--failed", "--json").json()
    assert [(c["id"], c["passed"]) for c in fixed["cases"]][0] == (failed[0], True)
    rest = cli("test", str(suite), "--endpoint", TRIAGE, "--failed", "--json").json()
    assert [c["id"] for c in rest["cases"]] == failed[1:]
    # Another agent has its own list.
    other = cli("test", str(suite), "--endpoint", "asgi:examples.agents.adder:app", "--failed")
    assert other.code == 2 and "no earlier run" in other.stderr
    both = cli("test", str(suite), "--endpoint", TRIAGE, "--failed", "--case", "tc-001")
    assert both.code == 2 and "--failed and --case" in both.stderr


def test_failed_with_nothing_failed_runs_nothing(cli: CLI) -> None:
    full = cli("test", str(TICKETS), "--endpoint", TRIAGE, "--json").json()
    good = next(c["id"] for c in full["cases"] if c["passed"])
    passed = cli("test", str(TICKETS), "--endpoint", TRIAGE, "--case", good, "--json")
    assert passed.json()["cases"][0]["passed"]
    res = cli("test", str(TICKETS), "--endpoint", TRIAGE, "--failed", "--json")
    assert res.code == 0 and res.json()["cases"] == [] and res.json()["summary"] is None
    assert "nothing to run again" in res.stderr


def test_html_is_one_escaped_page(cli: CLI, tmp_path: Path) -> None:
    suite = _copy_suite(tmp_path)
    cases = suite / "cases" / "public.jsonl"
    first = json.loads(cases.read_text().splitlines()[0])
    # A hostile subject: markup and a bidi override, in the page as text only.
    first["input"]["subject"] = "<script>alert(1)</script> \u202eevil"
    rest = cases.read_text().splitlines()[1:]
    cases.write_text("\n".join([json.dumps(first), *rest]) + "\n")
    page = tmp_path / "run.html"
    res = cli("test", str(suite), "--endpoint", TRIAGE, "--html", str(page), "--json")
    assert res.code in (0, 1), res.stderr
    text = page.read_text()
    assert text.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in text
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert "\u202e" not in text and "\\u202e" in text
    body = res.json()
    failing = sum(1 for c in body["cases"] if not c["passed"])
    assert f"Failing cases ({failing})" in text
    assert f"Passing cases ({len(body['cases']) - failing})" in text
    bad = cli("test", str(suite), "--endpoint", TRIAGE, "--html", str(tmp_path), "--json")
    assert bad.code == 2 and bad.json()["error"]["details"]["file"] == str(tmp_path)


def _lines(stream: Any, deadline: float) -> Iterator[dict[str, Any]]:
    while time.monotonic() < deadline:
        line = stream.readline()
        if not line:
            return
        yield json.loads(line)


@pytest.mark.slow
def test_watch_runs_again_on_every_change(tmp_path: Path) -> None:
    suite = _copy_suite(tmp_path)
    env = {**os.environ, "HOLON_HOME": str(tmp_path / "home"), "HOLON_EXAMPLES": "off"}
    argv = [sys.executable, "-m", "gateway.cli", "test", str(suite), "--endpoint", TRIAGE]
    errors = (tmp_path / "stderr.txt").open("w")
    with (
        errors,
        subprocess.Popen(
            [*argv, "--watch", "--watch-interval", "0.1", "--json"],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            env=env,
            cwd=ROOT,
        ) as proc,
    ):
        try:
            assert proc.stdout is not None
            docs = _lines(proc.stdout, time.monotonic() + 60)
            first = next(docs)
            assert first["summary"]["cases"] == 50
            cases = suite / "cases" / "public.jsonl"
            cases.write_text("".join(cases.read_text().splitlines(keepends=True)[:10]))
            assert next(docs)["summary"]["cases"] == 10
            # A suite that no longer loads is reported, and the watch goes on.
            (suite / "suite.yaml").write_text("schema_version: [\n")
            broken = next(docs)["error"]
            assert broken["details"]["file"].endswith("suite.yaml"), broken
            shutil.copy(TICKETS / "suite.yaml", suite / "suite.yaml")
            assert next(docs)["summary"]["cases"] == 10
        finally:
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=20)
    assert "watching" in (tmp_path / "stderr.txt").read_text()
    assert code == 130


def test_watch_needs_a_directory(cli: CLI) -> None:
    res = cli("test", "ticket-classify", "--endpoint", TRIAGE, "--watch")
    assert res.code == 2 and "--watch needs a suite directory" in res.stderr
    res = cli("test", str(TICKETS), "--endpoint", TRIAGE, "--watch", "--watch-interval", "0")
    assert res.code == 2 and "--watch-interval" in res.stderr


def test_junit_shows_what_hides_or_reorders_text(cli: CLI, tmp_path: Path) -> None:
    """The echo agent answers a bidi override and a NUL back: JUnit shows them as escapes."""
    from xml.etree import ElementTree as ET

    from tests.evals.suites._make import case, make_suite

    hostile = "\u202eexe.txt\x00"
    suite = make_suite(tmp_path, public=[case("p1", hostile, "other"), case("p2")])
    junit = tmp_path / "r.xml"
    res = cli(
        "test",
        str(suite),
        "--endpoint",
        "asgi:tests.evals.reports._agent:v1",
        "--junit",
        str(junit),
    )
    assert res.code == 1, res.stderr
    text = junit.read_text(encoding="utf-8")
    assert "\u202e" not in text and "\\u202eexe.txt\\u0000" in text  # JSON-quoted actual
    failure = ET.fromstring(text).find("testsuite/testcase/failure")
    assert failure is not None and "\\u202e" in (failure.text or "")
