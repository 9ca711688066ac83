"""What `holon path` and `holon checks grade` do, for the CLI layer to print.

These functions load files, raise holon errors (exit codes live on the
classes: a bad query or bad checks is 2) and return plain data; printing,
`--json` and exit codes are the CLI framework's job.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evals.checks._compile import compile_checks
from evals.checks._grade import grade, query
from evals.checks._limits import LimitExceeded
from evals.checks._paths import PdfUnreadable
from evals.checks._render import render_result
from evals.checks._results import CaseGrade
from evals.checks._structure import CompiledCheck
from schema import jsontext
from schema.documents import load_document, read_text
from schema.errors import CheckError, InputError, Location, checked

MAX_INPUT_BYTES = 64 * 1024 * 1024
DOCUMENT_KEYS = ("case", "expected", "input", "output", "usage")


def load_value(file: Path) -> Any:
    """A JSON file (numbers exact), or YAML for `.yaml`/`.yml`, as a plain value."""
    if file.suffix.lower() in {".yaml", ".yml"}:
        return load_document(file).value
    text = read_text(file, max_bytes=MAX_INPUT_BYTES, expected="a JSON file")
    try:
        return jsontext.loads(text)
    except RecursionError:
        raise InputError("JSON nests too deeply", location=Location(str(file))) from None
    except jsontext.NumberError as exc:
        where = Location(str(file), path=jsontext.format_path(exc.path))
        raise InputError(exc.problem, location=where) from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        column = getattr(exc, "colno", None)
        message = getattr(exc, "msg", None) or str(exc)
        if line is None:  # NaN or Infinity: refused by the decoder, which has no position
            line, column = _constant_position(text)
        raise InputError(
            f"not valid JSON: {message}", location=Location(str(file), line, column)
        ) from None


def _constant_position(text: str) -> tuple[int | None, int | None]:
    """Line and column of the first NaN/Infinity outside a string, if any."""
    in_string = escaped = False
    line, column = 1, 1
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif text.startswith(("NaN", "Infinity", "-Infinity"), index):
            return line, column
        if char == "\n":
            line, column = line + 1, 1
        else:
            column += 1
    return None, None


def cli_path(query_text: str, file: Path) -> list[dict[str, Any]]:
    """`holon path QUERY FILE`: `[{"path": normalized path, "value": …}]` in document order.

    A bad query raises CheckError (exit 2) whose message shows a caret under the fault.
    """
    value = load_value(file)
    try:
        nodes = query(query_text, value)
    except (LimitExceeded, PdfUnreadable) as exc:
        raise InputError(str(exc), location=Location(str(file))) from None
    return [{"path": node.path, "value": node.value} for node in nodes]


def render_nodes(nodes: list[dict[str, Any]]) -> list[str]:
    """Human lines for `holon path`: `$['a'][0] = <JSON>`, or one line saying nothing matched."""
    if not nodes:
        return ["no nodes matched"]
    return [f"{node['path']} = {jsontext.dumps(node['value'])}" for node in nodes]


@dataclass(frozen=True)
class GradeReport:
    """`holon checks grade`: the grade, and what to print for people or for `--json`."""

    checks_file: Path
    document_file: Path
    checks: tuple[CompiledCheck, ...]
    grade: CaseGrade

    @property
    def passed(self) -> bool:
        return self.grade.passed

    @property
    def exit_code(self) -> int:
        """0 when every check passes, 1 when some fail (invalid checks raised CheckError: 2)."""
        return checked(self.grade.passed)

    def lines(self) -> list[str]:
        out: list[str] = []
        for result in self.grade.results:
            out.extend(render_result(result))
        passed = sum(1 for result in self.grade.results if result.passed)
        total = len(self.grade.results)
        out.append("")
        verdict = "PASS" if self.grade.passed else "FAIL"
        out.append(f"{verdict}: {passed} of {total} checks passed")
        return out

    def to_json(self) -> dict[str, Any]:
        results = [result.to_json() for result in self.grade.results]
        passed = sum(1 for result in results if result["passed"])
        return {
            "passed": self.grade.passed,
            "summary": {"checks": len(results), "passed": passed, "failed": len(results) - passed},
            "results": results,
        }


def cli_grade(checks_file: Path, document_file: Path) -> GradeReport:
    """`holon checks grade CHECKS_FILE DOCUMENT_FILE`: grade one JSON document.

    CHECKS_FILE is a YAML or JSON list of checks (schema `$ref`s relative to
    its directory); DOCUMENT_FILE is `{"input", "output", "expected", "usage", "case"}`.
    """
    source = load_document(checks_file)
    checks = compile_checks(source.value, document=source, base_dir=checks_file.parent)
    if not checks:
        raise CheckError(
            "no checks: a case that cannot fail measures nothing",
            location=Location(str(checks_file), 1, 1),
        )
    document = load_value(document_file)
    if not isinstance(document, dict):
        raise InputError(
            "a graded document is an object with input, output, expected, usage, case",
            location=Location(str(document_file)),
        )
    unknown = sorted(set(document) - set(DOCUMENT_KEYS))
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r}; a graded document has {', '.join(DOCUMENT_KEYS)}",
            location=Location(str(document_file), path=f"$.{unknown[0]}"),
        )
    return GradeReport(checks_file, document_file, tuple(checks), grade(checks, document))
