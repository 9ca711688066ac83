"""`holon eval`, `holon evals …` and `holon records show` through the CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gateway._cli import CLI, DOWN, TRIAGE, add_triage

ROOT = Path(__file__).resolve().parents[2]


def _setup(cli: CLI, tmp_path: Path, cases: int = 6) -> None:
    add_triage(cli, tmp_path, cases)


def test_eval_prints_the_plan_and_the_record(cli: CLI, tmp_path: Path) -> None:
    _setup(cli, tmp_path)
    res = cli("eval", "acme/ticket-triage", "--yes")
    assert res.code in (0, 1), res.stderr
    assert "12 cells, worst case $0.12" in res.stdout
    assert "eval_score:" in res.stdout and "record:        written" in res.stdout
    record = cli("records", "show", "acme/ticket-triage", "--json").json()
    assert set(record["suites"]) == {"tiny"}
    listed = cli("evals", "list", "--json").json()["items"]
    assert len(listed) == 1 and listed[0]["status"] == "done"
    status = cli("evals", "status", listed[0]["id"], "--json").json()
    assert status["progress"] == {"pending": 0, "running": 0, "done": 12}


def test_eval_json_and_exit_code_follow_the_threshold(cli: CLI, tmp_path: Path) -> None:
    _setup(cli, tmp_path)
    res = cli("eval", "acme/ticket-triage", "--yes", "--json")
    body = res.json()
    assert res.code == (0 if body["eval"]["meets_thresholds"] else 1)
    assert body["plan"]["cells"] == 12
    assert "holdout_epoch" not in body["plan"]["suites"][0]


def test_no_terminal_and_no_yes_is_a_refusal(cli: CLI, tmp_path: Path) -> None:
    _setup(cli, tmp_path)
    res = cli("eval", "acme/ticket-triage", "--json")
    assert res.code == 2
    assert res.json()["error"]["details"]["hint"] == "add --yes to run it"
    assert cli("evals", "list", "--json").json()["items"] == []


def test_max_cost_refuses_an_expensive_plan(cli: CLI, tmp_path: Path) -> None:
    _setup(cli, tmp_path)
    res = cli("eval", "acme/ticket-triage", "--yes", "--max-cost", "0.05")
    assert res.code == 2 and "over --max-cost" in res.stderr


def test_a_lying_agent_is_refused_before_the_first_case(cli: CLI, tmp_path: Path) -> None:
    _setup(cli, tmp_path)
    liar = tmp_path / "liar.yaml"
    liar.write_text(TRIAGE.read_text().replace("\nversion: ", "\nversion: 9.9.9 #", 1))
    assert cli("agents", "register", str(liar)).code == 0
    res = cli("eval", "acme/ticket-triage", "--yes")
    assert res.code == 2 and "answers as acme/ticket-triage" in res.stderr
    assert cli("evals", "list", "--json").json()["items"] == []


def test_records_of_unevaluated_agents(cli: CLI, tmp_path: Path) -> None:
    _setup(cli, tmp_path)
    res = cli("records", "show", "acme/ticket-triage")
    assert res.code == 2 and "has not been evaluated" in res.stderr


def test_cancel(cli: CLI, tmp_path: Path) -> None:
    _setup(cli, tmp_path)
    cli("eval", "acme/ticket-triage", "--yes")
    eval_id = cli("evals", "list", "--json").json()["items"][0]["id"]
    res = cli("evals", "cancel", eval_id)
    assert res.code == 2 and "is done, not running" in res.stderr


@pytest.mark.slow
def test_sigkill_and_resume_give_the_same_record(tmp_path: Path) -> None:
    """A real `holon eval` process is killed mid-run; `holon evals resume` finishes it."""
    home = tmp_path / "home"
    env = {**os.environ, "HOLON_HOME": str(home), "HOLON_EXAMPLES": "off"}
    env.pop("HOLON_DATABASE_URL", None)
    cli = CLI(home)
    _setup(cli, tmp_path, cases=20)
    reference = cli("eval", "acme/ticket-triage", "--yes", "--json").json()["eval"]
    command = [
        sys.executable,
        "-m",
        "gateway.cli",
        "eval",
        "acme/ticket-triage",
        "--yes",
        # Paced so that the polls below (each a CLI process, a second or so on a loaded
        # machine) see 20 cells done well before all 40 are.
        "--pace",
        "0.15",
        "--concurrency",
        "2",
    ]
    for kill_at in (3, 20):  # cells recorded before the kill
        before = {e["id"] for e in cli("evals", "list", "--json").json()["items"]}
        proc = subprocess.Popen(
            command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        killed = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and killed is None:
            items = cli("evals", "list", "--json").json()["items"]
            fresh = [e for e in items if e["id"] not in before]
            if fresh:
                status = cli("evals", "status", fresh[0]["id"], "--json").json()
                if status["progress"]["done"] >= kill_at:
                    killed = fresh[0]
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        assert killed is not None, "the eval never got going"
        status = cli("evals", "status", killed["id"], "--json").json()
        assert status["status"] == "running" and status["progress"]["done"] < 40
        resumed = cli("evals", "resume", killed["id"], "--json").json()
        assert "error" not in resumed, resumed
        assert resumed["status"] == "done"
        assert resumed["progress"] == {"pending": 0, "running": 0, "done": 40}
        for key in ("eval_score", "eval_score_ci95", "suites", "warnings"):
            assert resumed["record"][key] == reference["record"][key]


def test_eval_all_prints_one_json_document(cli: CLI, tmp_path: Path) -> None:
    _setup(cli, tmp_path)
    down = tmp_path / "down.yaml"
    down.write_text(DOWN)
    assert cli("agents", "register", str(down)).code == 0
    res = cli("eval", "--all", "--capability", "ticket.classify", "--yes", "--json")
    body = res.json()  # one document, whatever each agent's eval did
    assert set(body) == {"capability", "exit_code", "agents"}
    triage, gone = body["agents"]["acme/ticket-triage"], body["agents"]["acme/down"]
    assert triage["eval"]["status"] == "done" and triage["plan"]["cells"] == 12
    assert gone["exit_code"] == 3 and gone["error"]["code"] == "agent_unreachable"
    assert res.code == body["exit_code"] == max(triage["exit_code"], gone["exit_code"])


def test_money_is_decimal_text_in_every_eval_view(cli: CLI, tmp_path: Path) -> None:
    _setup(cli, tmp_path)
    done = cli("eval", "acme/ticket-triage", "--yes", "--json").json()
    eval_id = done["eval"]["id"]
    views = {
        "eval": done,
        "status": cli("evals", "status", eval_id, "--json").json(),
        "list": cli("evals", "list", "--json").json(),
        "record": cli("records", "show", "acme/ticket-triage", "--json").json(),
    }

    def floats(node: object, at: str) -> list[str]:
        if isinstance(node, float):
            return [at]
        if isinstance(node, dict):
            return [p for k, v in node.items() for p in floats(v, f"{at}.{k}")]
        if isinstance(node, list):
            return [p for i, v in enumerate(node) for p in floats(v, f"{at}[{i}]")]
        return []

    money = [
        path
        for name, view in views.items()
        for path in floats(view, name)
        if "usd" in path.rsplit(".", 1)[-1] or "cost" in path.rsplit(".", 1)[-1]
    ]
    assert money == []


def test_eval_writes_junit_for_ci(cli: CLI, tmp_path: Path) -> None:
    from xml.etree import ElementTree as ET

    _setup(cli, tmp_path)
    junit = tmp_path / "out" / "eval.xml"
    junit.parent.mkdir()
    res = cli("eval", "acme/ticket-triage", "--yes", "--junit", str(junit), "--json")
    assert res.code in (0, 1), res.stderr
    eval_id = res.json()["eval"]["id"]
    # The author audience: what `evals report --format junit` gives by default.
    assert junit.read_text() == cli("evals", "report", eval_id, "--format", "junit").stdout
    (suite,) = ET.parse(junit).getroot()
    names = {c.get("name") for c in suite.iter("testcase")}
    assert names == {f"p{i}" for i in range(6)} | {"score"}  # no holdout case
    refused = cli("eval", "--all", "--capability", "ticket.classify", "--junit", "x.xml", "--yes")
    assert refused.code == 2 and "--junit takes one agent" in refused.stderr
