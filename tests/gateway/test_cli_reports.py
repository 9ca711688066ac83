"""`holon evals report` and `holon evals compare` through the CLI, on real evals."""

from __future__ import annotations

import html
from pathlib import Path

from schema import validator
from tests.evals.reports._setup import PAYLOAD, SECRET_IDS, suite_dir, write_manifest
from tests.gateway._cli import CLI


def _setup(cli: CLI, tmp_path: Path) -> str:
    """The echo agent's suite and version 1, evaluated; the eval's id."""
    assert cli("suites", "add", str(suite_dir(tmp_path / "src"))).code == 0
    assert cli("agents", "register", str(write_manifest(tmp_path))).code == 0
    return _eval(cli)


def _eval(cli: CLI) -> str:
    res = cli("eval", "test/echo", "--yes", "--json")
    assert res.code in (0, 1), res.stderr
    eval_id: str = res.json()["eval"]["id"]
    return eval_id


def test_report_in_every_format(cli: CLI, tmp_path: Path) -> None:
    eval_id = _setup(cli, tmp_path)
    as_json = cli("evals", "report", eval_id, "--format", "json")
    assert as_json.code == 0, as_json.stderr
    report = as_json.json()
    assert not list(validator("report").iter_errors(report))
    assert report["audience"] == "author" and report["eval"]["id"] == eval_id
    # --json alone picks the JSON format.
    assert cli("evals", "report", eval_id, "--json").stdout == as_json.stdout
    markdown = cli("evals", "report", eval_id)  # Markdown by default
    assert markdown.code == 0 and markdown.stdout.startswith("# Eval report: test/echo 1.0.0")
    target = tmp_path / "report.html"
    written = cli("evals", "report", eval_id, "--format", "html", "-o", str(target))
    assert written.code == 0 and written.stdout == "" and f"wrote {target}" in written.stderr
    page = target.read_text(encoding="utf-8")
    assert html.escape(PAYLOAD) in page and "<script" not in page.lower()
    for text in (as_json.stdout, markdown.stdout, page):
        assert not any(secret in text for secret in SECRET_IDS)


def test_the_operator_audience_is_asked_for(cli: CLI, tmp_path: Path) -> None:
    eval_id = _setup(cli, tmp_path)
    res = cli("evals", "report", eval_id, "--format", "json", "--audience", "operator")
    assert res.code == 0
    cases = {c["case_id"] for c in res.json()["suites"][0]["cases"]}
    assert set(SECRET_IDS) <= cases
    assert "plan_digest" in res.json()["eval"]


def test_report_refusals(cli: CLI, tmp_path: Path) -> None:
    eval_id = _setup(cli, tmp_path)
    unknown = cli("evals", "report", "ev_01M8KYX2399MFPEAV9ECCJWA17")
    assert unknown.code == 2 and "no eval 'ev_01M8KYX2399MFPEAV9ECCJWA17'" in unknown.stderr
    as_json = cli("evals", "report", "ev_01M8KYX2399MFPEAV9ECCJWA17", "--json")
    assert as_json.code == 2 and as_json.json()["error"]["code"] == "not_found"
    bad_format = cli("evals", "report", eval_id, "--format", "pdf")
    assert bad_format.code == 2 and "invalid choice: 'pdf'" in bad_format.stderr
    bad_audience = cli("evals", "report", eval_id, "--audience", "public")
    assert bad_audience.code == 2 and "invalid choice: 'public'" in bad_audience.stderr
    nowhere = cli("evals", "report", eval_id, "-o", str(tmp_path / "missing" / "r.md"))
    assert nowhere.code == 2 and "cannot write" in nowhere.stderr
    remote = cli("evals", "report", eval_id, "--gateway", "http://127.0.0.1:9")
    assert remote.code == 2 and "store" in remote.stderr


def test_compare_gates_on_critical_regressions(cli: CLI, tmp_path: Path) -> None:
    base = _setup(cli, tmp_path)
    same = _eval(cli)
    passed = cli("evals", "compare", base, same)
    assert passed.code == 0, passed.stderr
    assert "## Gate: passed" in passed.stdout
    assert cli("agents", "register", str(write_manifest(tmp_path, "2.0.0"))).code == 0
    candidate = _eval(cli)
    failed = cli("evals", "compare", base, candidate)
    assert failed.code == 1
    assert "## Gate: **FAILED**" in failed.stdout
    # The author audience (the default) counts the holdout for the gate, shows no count.
    assert "gate failed: critical cases regressed (public 1, holdout not shown)" in failed.stderr
    assert not any(secret in failed.stdout for secret in SECRET_IDS)
    body = cli("evals", "compare", base, candidate, "--format", "json", "--audience", "operator")
    assert body.code == 1
    assert not list(validator("compare").iter_errors(body.json()))
    assert {c["case_id"] for c in body.json()["gate"]["cases"]} == {"pub-critical", SECRET_IDS[2]}


def test_compare_refuses_evals_that_measure_different_things(cli: CLI, tmp_path: Path) -> None:
    base = _setup(cli, tmp_path)
    assert cli("suites", "rotate-holdout", "tiny").code == 0
    candidate = _eval(cli)
    refused = cli("evals", "compare", base, candidate)
    assert refused.code == 2
    assert "the holdouts are of different epochs" in refused.stderr
    assert "--allow-mismatch" in refused.stderr
    allowed = cli("evals", "compare", base, candidate, "--allow-mismatch")
    assert allowed.code == 0 and "**Unmatched**" in allowed.stdout
    unknown = cli("evals", "compare", base, "ev_01M8KYX2399MFPEAV9ECCJWA17")
    assert unknown.code == 2 and "no eval" in unknown.stderr
    bad_format = cli("evals", "compare", base, candidate, "--format", "junit")
    assert bad_format.code == 2 and "invalid choice: 'junit'" in bad_format.stderr
