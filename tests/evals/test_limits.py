"""Agent output is hostile: linear-time regexes, deterministic caps, the wall-clock guard."""

from __future__ import annotations

from typing import Any

import pytest

from evals.checks import GradingTimeout, compile_checks, grade
from evals.checks._limits import MAX_ARRAY_ITEMS, MAX_SIMILAR_CHARS, MAX_STRING_CHARS
from schema.errors import EnvironmentFault
from tests.evals._checks import checks, doc, one


@pytest.mark.parametrize(
    "pattern",
    ["(a+)+$", "(a|aa)+$", "(a|a?)+b", "^(([a-z])+.)+[A-Z]([a-z])+$", "(x+x+)+y"],
)
def test_catastrophic_patterns_run_in_linear_time(pattern: str) -> None:
    # Python's re needs more than 8 s for (a+)+$ on 27 characters; RE2 is linear.
    hostile = "a" * 200_000 + "!"
    result = one(f"{{path: $.output, full_match: '{pattern}'}}", doc(hostile))
    assert result.status == "fail"
    assert one(f"{{path: $.output, matches: '{pattern}'}}", doc("x" * 100_000)).status in {
        "pass",
        "fail",
    }


def _over(kind: str) -> tuple[Any, str]:
    """A value one over `kind`'s cap, and the detail that names the cap."""
    if kind == "string":
        return "a" * (MAX_STRING_CHARS + 1), (
            f"string of {MAX_STRING_CHARS + 1} characters is over the "
            f"{MAX_STRING_CHARS}-character limit"
        )
    return list(range(MAX_ARRAY_ITEMS + 1)), (
        f"array of {MAX_ARRAY_ITEMS + 1} items is over the {MAX_ARRAY_ITEMS}-item limit"
    )


@pytest.mark.parametrize(
    ("check", "kind"),
    [
        ("{path: $.output, matches: a}", "string"),
        ("{path: $.output, contains: a}", "string"),
        ("{path: $.output, starts_with: a}", "string"),
        ("{path: $.output, equals: a, normalize: [casefold]}", "string"),
        ("{path: $.output, contains_only: [1]}", "array"),
        ("{path: $.output, contains: -1}", "array"),
        ("{path: $.output, f1: {to: [], key: id}}", "array"),
    ],
)
def test_values_over_the_cap_fail_with_the_cap_named(check: str, kind: str) -> None:
    huge, detail = _over(kind)
    result = one(check, doc(huge))
    assert result.status == "fail"
    assert result.detail == detail


def test_similar_names_its_own_cap() -> None:
    similar = one("{path: $.output, similar: {to: a}}", doc("b" * (MAX_SIMILAR_CHARS + 1)))
    assert similar.detail == (
        f"similar compares at most {MAX_SIMILAR_CHARS} characters, "
        f"got a string of {MAX_SIMILAR_CHARS + 1}"
    )
    assert one("{path: $.output, similar: {to: a}}", doc("b" * MAX_SIMILAR_CHARS)).status == "fail"


def test_a_huge_output_is_graded_within_the_caps() -> None:
    output = {"items": [{"sku": f"S-{i}", "qty": i} for i in range(60_000)], "text": "z" * 900_000}
    source = (
        "- {path: '$.output.items[*].qty', each: {gte: 0}}\n"
        "- {path: '$.output.items[*].sku', contains_all: [S-1, S-59999]}\n"
        "- {path: '$.output..qty', count: 60000}\n"
        "- {path: $.output.text, matches: '(z+)+y'}\n"
        "- {path: $.output.text, similar: {to: zzz}}\n"
    )
    results = grade(checks(source), doc(output), timeout_s=60).results
    assert [r.status for r in results] == ["pass", "pass", "pass", "fail", "fail"]


def test_the_wall_clock_guard_is_an_infrastructure_error() -> None:
    compiled = checks("- {path: $.output, equals: 1}")
    with pytest.raises(GradingTimeout) as caught:
        grade(compiled, doc(1), timeout_s=-1)
    assert isinstance(caught.value, EnvironmentFault)
    assert caught.value.exit_code == 3
    assert caught.value.code == "grading_timeout"


def test_a_check_that_raises_is_a_failed_check_not_a_crashed_run() -> None:
    def boom(actual: Any, operand: Any) -> bool:
        return bool(1 / 0)

    def junk(actual: Any, operand: Any) -> Any:
        return "yes"

    def explains(actual: Any, operand: Any) -> tuple[bool, str]:
        return actual == operand, f"compared\n{actual!r} with {operand!r}"

    compiled = compile_checks(
        [
            {"path": "$.output", "boom": None},
            {"path": "$.output", "junk": None},
            {"path": "$.output", "explains": 2},
            {"path": "$.output", "equals": 1},
        ],
        extensions={"boom": boom, "junk": junk, "explains": explains},
    )
    results = grade(compiled, doc(1)).results
    assert [(r.status, r.detail) for r in results] == [
        ("error", "check raised ZeroDivisionError: division by zero"),  # a grader bug
        ("fail", "extension junk returned str, not a bool"),
        ("fail", "compared 1 with 2"),
        ("pass", "expected 1, got 1"),
    ]


def test_deep_values_fail_the_check_instead_of_the_run() -> None:
    deep: Any = 1
    for _ in range(5_000):
        deep = [deep]
    result = one("{path: $.output, equals: {path: $.expected}}", doc(deep, deep))
    assert (result.status, result.detail) == ("fail", "the value nests too deeply to compare")


def test_grading_no_checks_is_refused() -> None:
    with pytest.raises(ValueError, match="measures nothing"):
        grade([], doc(1))
