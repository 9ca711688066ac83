"""Helpers for the check DSL tests: compile checks from YAML text, grade one document."""

from __future__ import annotations

from typing import Any

from evals.checks import CheckResult, compile_checks, grade
from schema import jsontext
from schema.documents import parse_document


def doc(output: Any = None, expected: Any = None, **extra: Any) -> dict[str, Any]:
    """A graded document; JSON text in `output`/`expected` strings is NOT parsed."""
    return {
        "input": extra.get("input", {}),
        "output": output,
        "expected": expected if expected is not None else {},
        "usage": {},
        "case": {"id": "c-1", "split": "public", "tags": []},
    }


def j(text: str) -> Any:
    """JSON text as holon reads it (numbers as int/Decimal)."""
    return jsontext.loads(text)


def checks(text: str, **kwargs: Any) -> list[Any]:
    parsed = parse_document(text, "suite.yaml")
    return compile_checks(parsed.value, document=parsed, **kwargs)


def one(check_yaml: str, document: Any, **kwargs: Any) -> CheckResult:
    """Grade one check written as a YAML flow mapping (or block) against `document`."""
    compiled = checks(
        f"- {check_yaml}" if not check_yaml.lstrip().startswith("-") else check_yaml, **kwargs
    )
    assert len(compiled) == 1
    return grade(compiled, document).results[0]
