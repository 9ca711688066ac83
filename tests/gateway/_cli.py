"""Run the CLI in-process, as a user would, with its own environment."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.cli import run


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


# An agent nobody answers for: a call to it (live, an eval's probe) is `unreachable` (exit 3).
DOWN = """\
schema_version: 1
id: acme/down
version: 1.0.0
protocol: holon-http
endpoint: http://127.0.0.1:1/agent
capabilities: [ticket.classify]
"""
