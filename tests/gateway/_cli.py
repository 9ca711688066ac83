"""Run the CLI in-process, as a user would, with its own environment."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.cli import run
from tests.evals.suites._make import tiny_suite

TRIAGE = Path(__file__).resolve().parents[2] / "examples" / "agents" / "acme-ticket-triage.yaml"


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


class CLI:
    def __init__(self, home: Path, **env: str) -> None:
        # A fresh store starts empty unless a test asks for the shipped examples.
        self.env = {"HOLON_HOME": str(home), "HOLON_EXAMPLES": "off", **env}

    def __call__(self, *argv: str, stdin: str = "") -> Result:
        out, err = io.StringIO(), io.StringIO()
        code = run(list(argv), environ=self.env, stdin=io.StringIO(stdin), stdout=out, stderr=err)
        return Result(code, out.getvalue(), err.getvalue())


# finance-bot's mandate for ticket.classify, a cent a call (as the API's `mandate()` has it).
FINANCE_MANDATE = """\
schema_version: 1
id: finance-tickets
holder: finance-bot
capabilities: [ticket.classify]
max_cost_per_call_usd: "0.01"
"""

# An agent nobody answers for: a call to it (live, an eval's probe) is `unreachable` (exit 3).
DOWN = """\
schema_version: 1
id: acme/down
version: 1.0.0
protocol: holon-http
endpoint: http://127.0.0.1:1/agent
capabilities: [ticket.classify]
"""


def add_triage(cli: CLI, root: Path, cases: int = 6, *, holdout_wrong: int = 0) -> None:
    """The tiny suite (evals.suites._make.tiny_suite, written under `root`) added and the
    triage example registered, through the CLI."""
    assert cli("suites", "add", str(tiny_suite(root, cases, holdout_wrong=holdout_wrong))).code == 0
    assert cli("agents", "register", str(TRIAGE)).code == 0
