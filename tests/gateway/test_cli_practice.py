"""`holon test` and `holon fixtures` through the CLI, against real example agents."""

from __future__ import annotations

import json
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest

from examples.agents import report_writer, ticket_triage
from tests._servers import serve
from tests.gateway._cli import CLI

ROOT = Path(__file__).resolve().parents[2]
TICKETS = str(ROOT / "examples" / "suites" / "ticket-classify")
REPORTS = str(ROOT / "examples" / "suites" / "report-render")
TRIAGE = "asgi:examples.agents.ticket_triage:app"


def _verdicts(body: dict[str, object]) -> list[tuple[object, ...]]:
    cases = body["cases"]
    assert isinstance(cases, list)
    return [
        (c["id"], c["passed"], [(r["name"], r["status"]) for r in c["cells"][0].get("checks", [])])
        for c in cases
    ]


def test_in_process_and_over_loopback_give_identical_results(cli: CLI) -> None:
    local = cli("test", TICKETS, "--endpoint", TRIAGE, "--json")
    assert local.code in (0, 1), local.stderr
    with serve(ticket_triage.app) as url:
        remote = cli("test", TICKETS, "--endpoint", url + "/", "--json")
    assert remote.code == local.code
    assert _verdicts(remote.json()) == _verdicts(local.json())
    summary = local.json()["summary"]
    assert summary["cases"] >= 30 and summary["outcomes"] == {"ok": summary["cells"]}


def test_human_output_lists_failures_and_a_summary(cli: CLI) -> None:
    res = cli("test", TICKETS, "--endpoint", TRIAGE)
    lines = res.stdout.splitlines()
    assert lines[-2].startswith("ticket-classify v1 public: ")
    assert "95% CI" in lines[-2] and "threshold" in lines[-2]
    body = cli("test", TICKETS, "--endpoint", TRIAGE, "--json").json()
    failed = [c["id"] for c in body["cases"] if not c["passed"]]
    for case_id in failed:
        assert any(line.startswith(f"FAIL {case_id} ") for line in lines)
    assert res.code == (0 if body["summary"]["meets_threshold"] else 1)


def test_case_narrowing_and_junit(cli: CLI, tmp_path: Path) -> None:
    body = cli("test", TICKETS, "--endpoint", TRIAGE, "--json").json()
    first, second = body["cases"][0]["id"], body["cases"][1]["id"]
    junit = tmp_path / "report.xml"
    res = cli(
        "test",
        TICKETS,
        "--endpoint",
        TRIAGE,
        "--case",
        first,
        "--case",
        second,
        "--junit",
        str(junit),
        "--json",
    )
    assert [c["id"] for c in res.json()["cases"]] == [first, second]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "2"
    assert [t.get("name") for t in suite.iter("testcase")] == [first, second]
    unknown = cli("test", TICKETS, "--endpoint", TRIAGE, "--case", "nope", "--json")
    assert unknown.code == 2 and "no public case 'nope'" in unknown.json()["error"]["message"]


def test_an_unreachable_agent_is_one_environment_error(cli: CLI, tmp_path: Path) -> None:
    junit = tmp_path / "unreachable.xml"
    argv = ("test", TICKETS, "--endpoint", "http://127.0.0.1:9/", "--junit", str(junit))
    res = cli(*argv, "--json")
    assert res.code == 3  # the agent is unreachable: an environment error, not a failed case
    error = res.json()["error"]
    assert error["code"] == "agent_unreachable"
    assert error["message"].startswith("the agent at http://127.0.0.1:9/ could not be reached")
    cases = len(cli("test", TICKETS, "--endpoint", TRIAGE, "--json").json()["cases"])
    assert error["details"] == {
        "endpoint": "http://127.0.0.1:9/",
        "cells": cases,
        "hint": "start the agent, or check --endpoint",
    }
    # CI still gets its JUnit file: every case failed, with the outcome.
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == str(cases)
    human = cli(*argv)
    assert human.code == 3 and "FAIL" not in human.stdout + human.stderr
    assert human.stderr.count("could not be reached") == 1


@pytest.mark.parametrize(
    ("endpoint", "what"),
    [
        ("https://user:pw@agents.example/", "credentials"),
        ("ftp://agents.example/", "http(s)"),
        ("asgi:no module", "asgi:"),
    ],
)
def test_bad_endpoints_are_usage_errors(cli: CLI, endpoint: str, what: str) -> None:
    res = cli("test", TICKETS, "--endpoint", endpoint, "--json")
    assert res.code == 2
    assert what in res.json()["error"]["message"]


def test_not_a_suite(cli: CLI, tmp_path: Path) -> None:
    res = cli("test", str(tmp_path), "--endpoint", TRIAGE)
    assert res.code == 2 and "not a suite" in res.stderr


@pytest.mark.parametrize("name", ["suites/nope", "./nope", "nope/suite.yaml", "Nope"])
def test_a_missing_path_is_named_as_missing(cli: CLI, tmp_path: Path, name: str) -> None:
    res = cli("test", str(tmp_path / name) if "/" in name else name, "--endpoint", TRIAGE, "--json")
    assert res.code == 2, res.stderr
    error = res.json()["error"]
    assert error["message"].endswith("no such suite directory or suite.yaml")
    assert "installed" not in error["message"]


@pytest.mark.slow
def test_holdout_never_reaches_author_output(cli: CLI, tmp_path: Path) -> None:
    """Nothing of a stored holdout (ids, inputs, expectations) shows in `holon test`."""
    holdout = [
        json.loads(line)
        for line in (Path(REPORTS) / "cases" / "holdout.jsonl").read_text().splitlines()
        if line.strip()
    ]
    junit = tmp_path / "r.xml"
    public_ids = [
        json.loads(line)["id"]
        for line in (Path(REPORTS) / "cases" / "public.jsonl").read_text().splitlines()[:6]
    ]
    narrow = [arg for case_id in public_ids for arg in ("--case", case_id)]
    with serve(report_writer.app) as url:
        outputs = [
            cli("test", REPORTS, "--endpoint", url + "/", "--junit", str(junit), *narrow),
            cli("test", REPORTS, "--endpoint", url + "/", "--json", *narrow),
            cli("suites", "validate", REPORTS, "--json"),
        ]
    text = "".join(r.stdout + r.stderr for r in outputs) + junit.read_text()
    secrets = {c["id"] for c in holdout} | {c["input"]["title"] for c in holdout}
    public_titles = {
        json.loads(line)["input"]["title"]
        for line in (Path(REPORTS) / "cases" / "public.jsonl").read_text().splitlines()
        if line.strip()
    }
    leaked = sorted(s for s in secrets - public_titles if s in text)
    assert leaked == []


def test_fixtures_render_and_list(cli: CLI, tmp_path: Path) -> None:
    out = tmp_path / "inv.pdf"
    res = cli("fixtures", "render", "invoice", "--seed", "7", "-o", str(out), "--json")
    assert res.code == 0, res.stderr
    body = res.json()
    assert out.read_bytes().startswith(b"%PDF-") and body["bytes"] == out.stat().st_size
    assert body["truth"]["invoice_number"]
    again = cli("fixtures", "render", "invoice", "--seed", "7", "-o", str(tmp_path / "b.pdf"))
    assert again.code == 0 and (tmp_path / "b.pdf").read_bytes() == out.read_bytes()
    ticket = cli("fixtures", "render", "ticket", "--seed", "3", "-o", str(tmp_path / "t.json"))
    assert ticket.code == 0 and "label:" in ticket.stdout
    bad = cli("fixtures", "render", "nope", "--seed", "1", "-o", str(tmp_path / "x"), "--json")
    assert bad.code == 2 and "known generators" in bad.json()["error"]["message"]
    names = [g["name"] for g in cli("fixtures", "list", "--json").json()["generators"]]
    assert {"invoice", "ticket"} <= set(names)


def test_a_manifest_names_the_agent_and_its_limits(cli: CLI) -> None:
    manifest = str(ROOT / "examples" / "agents" / "acme-ticket-triage.yaml")
    by_manifest = cli("test", TICKETS, "--manifest", manifest, "--json")
    by_endpoint = cli("test", TICKETS, "--endpoint", TRIAGE, "--json")
    assert by_manifest.code == by_endpoint.code
    assert _verdicts(by_manifest.json()) == _verdicts(by_endpoint.json())
    with serve(ticket_triage.app) as url:
        moved = cli("test", TICKETS, "--manifest", manifest, "--endpoint", url + "/", "--json")
    assert _verdicts(moved.json()) == _verdicts(by_endpoint.json())
    neither = cli("test", TICKETS)
    assert neither.code == 2 and "--endpoint URL or --manifest FILE" in neither.stderr


@pytest.mark.slow
def test_invoices_in_process_and_over_loopback_agree(cli: CLI) -> None:
    """The issue's proof: invoice-extract against the same agent both ways."""
    from examples.agents import invoice_reader

    suite = str(ROOT / "examples" / "suites" / "invoice-extract")
    local = cli("test", suite, "--endpoint", "asgi:examples.agents.invoice_reader:app", "--json")
    assert local.code in (0, 1), local.stderr
    with serve(invoice_reader.app) as url:
        remote = cli("test", suite, "--endpoint", url + "/", "--json")
    assert remote.code == local.code
    assert _verdicts(remote.json()) == _verdicts(local.json())
    assert local.json()["summary"]["cases"] >= 30
