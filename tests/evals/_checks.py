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


GENEROUS_TIMEOUT_S = 120.0


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
    # The deterministic limits are what these tests pin; the wall-clock guard
    # (2 s by default, an infrastructure error) must not decide them on a busy
    # machine, so it is set far away. test_limits.py tests the guard itself.
    return grade(compiled, document, timeout_s=GENEROUS_TIMEOUT_S).results[0]
