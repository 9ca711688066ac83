"""A capability's contract: its active suite's input and output schemas, compiled once.

The gateway holds live calls to the contract an agent was certified on
(docs/gateway.md, "The contract on live calls"): a live input is checked as
an eval cell checks its expanded input (`schema.make_validator`, formats
asserted), and a live output as the suite's implicit output schema check
grades it (`evals.checks.check_validator_class`), so live and eval accept
exactly the same documents. A violation is located as those are: the JSON
path (`$.input.a`, `$.output.sum`) and what was expected
(`schema.documents.explain`).

A contract is built from an installed suite's files as stored (the store
validated them when the suite was installed), without materialising the
suite or importing its extensions: the two schemas, and the suite's
reference-free checks (`live_checks`: those that read only `input` and
`output`, found by the DSL), which every live answer is graded by too.
Validation is bounded: the quick path (`schema.quick_validity`) answers the
common valid document in microseconds; a failing one is explained from at
most `MAX_ERRORS` errors, whatever the document holds, in at most `MAX_TEXT`
printable characters.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agents import printable
from evals.checks import CompiledCheck, check_validator_class, compile_checks, grade
from evals.suites._load import SUITE_FILE
from schema import make_validator, parse_document, quick_validity
from schema.documents import explain, format_path
from schema.errors import HolonError, SuiteError

__all__ = ["Contract", "Violation", "contract_from_files"]

# A violation reports its first error (by path) and how many were found, up to this.
MAX_ERRORS = 10
# What it says is bounded and printable: a path or message can quote what a hostile
# caller or agent sent (jsonschema's own messages quote whole values).
MAX_TEXT = 300


@dataclass(frozen=True)
class Violation:
    """Where a document breaks a schema and what was expected there."""

    path: str  # "$.input.a"
    error: str  # "expected number, got string 'x'"
    errors: str  # how many were found: "1" .. "10", or "10+"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "error": self.error, "errors": self.errors}


def _violation(validator: Any, value: Any, root: str) -> Violation | None:
    found: list[tuple[tuple[str, ...], str, str]] = []
    for error in validator.iter_errors(value):
        message, at = explain(error)
        path = (root, *at)
        found.append((tuple(str(part) for part in path), format_path(path), message))
        if len(found) >= MAX_ERRORS:
            break
    if not found:
        return None
    found.sort()
    count = f"{MAX_ERRORS}+" if len(found) >= MAX_ERRORS else str(len(found))
    _, path_text, message = found[0]
    return Violation(printable(path_text, MAX_TEXT), printable(message, MAX_TEXT), count)


class Contract:
    """The input and output schemas of one installed suite version, compiled."""

    def __init__(
        self,
        suite_id: str,
        version: int,
        capability: str,
        input_schema: dict[str, Any],
        output_schema: dict[str, Any],
        live_checks: Sequence[CompiledCheck] = (),
    ) -> None:
        self.suite_id = suite_id
        self.version = version
        self.capability = capability
        # As installed: what the front doors publish (MCP tool schemas, A2A skills).
        self.input_schema = input_schema
        self.output_schema = output_schema
        self._input = make_validator(input_schema)
        self._input_quick = quick_validity(input_schema)
        self._output = check_validator_class(output_schema)(output_schema)
        self._output_quick = quick_validity(output_schema)
        # The suite's own checks that read only input and output: every live answer is
        # graded by them too (`live_check_failures`).
        self.live_checks = tuple(live_checks)

    @property
    def key(self) -> str:
        return f"{self.suite_id}@{self.version}"

    def input_violation(self, value: Any) -> Violation | None:
        """None when `value` is a valid input, else its first located error."""
        return self._check(self._input, self._input_quick, value, "input")

    def output_violation(self, value: Any) -> Violation | None:
        """None when `value` is a valid output, else its first located error."""
        return self._check(self._output, self._output_quick, value, "output")

    @staticmethod
    def _check(
        validator: Any, quick: Callable[[Any], bool] | None, value: Any, root: str
    ) -> Violation | None:
        if quick is not None and quick(value):
            return None
        return _violation(validator, value, root)

    def live_check_failures(self, input: Any, output: Any) -> list[str]:
        """The names of the live checks a live answer fails (none: it passes them all, or
        the suite has none). Bounded as an eval cell's grading is (evals.checks.grade)."""
        if not self.live_checks:
            return []
        graded = grade(self.live_checks, {"input": input, "output": output})
        return [result.name for result in graded.failed]

    def to_json(self) -> dict[str, Any]:
        return {"suite": self.suite_id, "suite_version": self.version}


def _schema(files: Mapping[str, str], document: Any, key: str, where: str) -> dict[str, Any]:
    ref = document.get(key, {}).get("$ref") if isinstance(document, dict) else None
    if not isinstance(ref, str):
        raise SuiteError(f"{where}: {key} has no $ref")
    relative = posixpath.normpath(ref)
    text = files.get(relative)
    if text is None:
        raise SuiteError(f"{where}: {key} names {ref!r}, which is not among its files")
    loaded = parse_document(text, f"{where}/{relative}").value
    if not isinstance(loaded, dict):
        raise SuiteError(f"{where}/{relative}: a JSON Schema is an object")
    return loaded


def contract_from_files(
    suite_id: str, version: int, capability: str, files: Mapping[str, str]
) -> Contract:
    """The contract of an installed suite version, from its files as stored."""
    where = f"<suite {suite_id} {version}>"
    if SUITE_FILE not in files:
        raise SuiteError(f"{where}: no {SUITE_FILE}")
    document = parse_document(files[SUITE_FILE], f"{where}/{SUITE_FILE}").value
    return Contract(
        suite_id,
        version,
        capability,
        _schema(files, document, "input_schema", where),
        _schema(files, document, "output_schema", where),
        _live_checks(document),
    )


def _live_checks(document: Any) -> list[CompiledCheck]:
    """The suite's checks (`checks:`, each case's default) that a live answer can be graded
    by: reference-free (they read only `input` and `output`), of the built-in predicates.
    A check that needs the suite's files (`schema: {$ref}`) or a trusted grader does not
    compile without them, and is left to evals; so is one that reads a PDF (slow)."""
    items = document.get("checks") if isinstance(document, dict) else None
    found: list[CompiledCheck] = []
    for item in items if isinstance(items, list) else []:
        try:
            (check,) = compile_checks([item])
        except HolonError:
            continue
        if check.reference_free:
            found.append(check)
    return found
