"""CLI start-up stays light: commands that never open a store never import one.

Each check runs a fresh interpreter (this process has long since imported
everything), then reads its `sys.modules`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from examples.agents import ticket_triage
from tests._fresh import fresh_python
from tests._servers import serve

ROOT = Path(__file__).resolve().parents[2]
TICKETS = str(ROOT / "examples" / "suites" / "ticket-classify")

# Needed only by commands that open the store or talk to a gateway.
STORE = [
    "sqlalchemy",
    "alembic",
    "records",
    "gateway.service",
    "gateway.mandates",
    "evals._runner",
    "evals._plan",
    "evals._worker",
    "evals._finish",
    "evals.reports",
    "evals.suites._install",
]
# Needed only by commands that call an agent, render fixtures or serve.
CALLS = ["agents", "aiohttp", "httpx", "evals", "reportlab", "pypdf", "uvicorn", "rich.progress"]

# Never needed on an author's loop (`holon test --help`, `holon test SUITE`), as the store
# is not: the server and its doors, and the operation table the store's commands are built
# from (which `holon --help` builds too).
SERVER = ["uvicorn", "starlette", "gateway.server", "gateway.console", "gateway.web"]
TABLE = ["gateway.client", "gateway.operations"]
# Needed only once something is validated, printed for people, or read from YAML (and no
# schema file is read before: the table reads its answers' schemas when a door asks).
HELP = ["jsonschema", "referencing", "rich", "ruamel.yaml", "httpx", "schema._files"]
# Never needed by holon: httpx's own command line, which its package imports when it can.
HTTPX_CLI = ["httpx._main", "click"]

# Runs the CLI in-process in the child, then reports its exit code, output
# and which of the watched modules got imported.
PROBE = """
import contextlib, io, json, sys
from gateway.cli import run
argv, watched = json.loads(sys.argv[1]), json.loads(sys.argv[2])
out, err, code = io.StringIO(), io.StringIO(), None
if argv is not None:  # argparse prints --help to sys.stdout itself
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(argv, stdout=out, stderr=err)
loaded = sorted(m for m in watched if m in sys.modules)
print(json.dumps({"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
                  "loaded": loaded}))
"""


def _probe(argv: list[str] | None, home: Path) -> dict[str, Any]:
    env = {**os.environ, "HOLON_HOME": str(home), "HOLON_EXAMPLES": "off"}
    for name in ("HOLON_DATABASE_URL", "HOLON_GATEWAY_URL", "HOLON_TOKEN"):
        env.pop(name, None)
    stdout = fresh_python(
        PROBE,
        json.dumps(argv),
        json.dumps(STORE + CALLS + SERVER + TABLE + HELP + HTTPX_CLI),
        env=env,
    )
    result: dict[str, Any] = json.loads(stdout)
    return result


def test_importing_the_cli_loads_no_store_and_no_client(tmp_path: Path) -> None:
    assert _probe(None, tmp_path)["loaded"] == []  # nor a validator, rich or the YAML reader


def test_help_builds_every_parser_without_the_store(tmp_path: Path) -> None:
    for argv in (["--help"], ["test", "--help"], ["evals", "report", "--help"], ["db", "--help"]):
        res = _probe(argv, tmp_path)
        assert res["code"] == 0, (argv, res["stderr"])
        assert "usage: holon" in res["stdout"]
        assert not set(res["loaded"]) & set(STORE + CALLS + SERVER + HELP + HTTPX_CLI), argv
    # The audiences still come out in the help, spelled as evals.reports has them.
    report = _probe(["evals", "report", "--help"], tmp_path)["stdout"]
    assert "--audience {author,operator}" in report


def test_holon_test_help_loads_only_the_parser(tmp_path: Path) -> None:
    res = _probe(["test", "--help"], tmp_path)
    assert res["code"] == 0 and "usage: holon test" in res["stdout"]
    assert res["loaded"] == []


def test_a_command_builds_only_its_own_parser() -> None:
    from gateway.cli._app import _Parser, command_word
    from gateway.cli._commands import COMMANDS, registrars

    for module, words in COMMANDS.items():
        parser = _Parser(prog="holon")
        sub = parser.add_subparsers(dest="command")
        for register in registrars(words[0]):
            register(sub)
        assert tuple(sub.choices) == words, module
    assert command_word(["--json", "--home", "test", "agents", "list"]) == "agents"
    assert command_word(["--gateway=http://x/", "test", "S"]) == "test"
    # An abbreviation or a short flag: argparse's reading, with every parser.
    assert command_word(["--hom", "test", "agents"]) is None
    assert command_word(["-h"]) is None
    assert len(registrars(None)) == len(registrars("no-such-command")) == len(COMMANDS)


def test_a_usage_error_loads_nothing_heavy(tmp_path: Path) -> None:
    res = _probe(["test", TICKETS], tmp_path)  # no --endpoint: refused before any import
    assert res["code"] == 2 and "--endpoint URL or --manifest FILE" in res["stderr"]
    assert res["loaded"] == ["rich"]  # to print the error


def test_holon_test_on_a_suite_directory_never_loads_the_store(tmp_path: Path) -> None:
    with serve(ticket_triage.app) as url:
        res = _probe(
            ["test", TICKETS, "--endpoint", url + "/", "--case", "tc-002", "--json"], tmp_path
        )
    assert res["code"] in (0, 1), res["stderr"]
    body = json.loads(res["stdout"])
    assert [c["id"] for c in body["cases"]] == ["tc-002"]
    assert body["summary"]["outcomes"] == {"ok": 1}
    assert not set(res["loaded"]) & set(STORE + SERVER + TABLE + HTTPX_CLI), res["loaded"]
    assert {"agents", "evals", "aiohttp"} <= set(res["loaded"])  # it did call the agent


def test_a_store_command_still_loads_the_store(tmp_path: Path) -> None:
    # The other side of the contract: laziness must not lose the store where it is needed.
    res = _probe(["agents", "list", "--json"], tmp_path)
    assert res["code"] == 0, res["stderr"]
    assert json.loads(res["stdout"])["items"] == []
    assert {"sqlalchemy", "records", "gateway.service"} <= set(res["loaded"])


def test_cli_audiences_match_the_reports() -> None:
    from evals.reports import AUDIENCES
    from gateway.cli._commands.reports import AUDIENCES as CLI_AUDIENCES

    assert CLI_AUDIENCES == AUDIENCES


def test_cli_report_formats_match_the_reports() -> None:
    from evals.reports import REPORT_FORMATS
    from gateway.cli._commands.reports import REPORT_FORMATS as CLI_FORMATS

    assert CLI_FORMATS == tuple(REPORT_FORMATS)


def test_cli_compare_formats_match_the_reports() -> None:
    from evals.reports import COMPARE_FORMATS
    from gateway.cli._commands.reports import COMPARE_FORMATS as CLI_FORMATS

    assert CLI_FORMATS == tuple(COMPARE_FORMATS)


def test_cli_compare_gate_is_the_reports() -> None:
    from evals.reports._gate import GATE_RULE
    from gateway.operations import COMPARE_GATE_RULE

    assert COMPARE_GATE_RULE == GATE_RULE


def test_the_import_bound_is_the_reports() -> None:
    from evals import MAX_REPORT_BYTES
    from gateway.operations import EVALS_IMPORT, REPORT_MAX_BYTES

    assert EVALS_IMPORT.max_body_bytes == REPORT_MAX_BYTES == MAX_REPORT_BYTES
