"""One cell: a case (and repetition) run through the executor and graded.

The same code serves `holon test` and `holon eval`: expand the case's
fixture references, check the input against the suite's input schema, call
the agent through the executor under the suite's per-case cap and deadline,
then grade the output with the case's compiled checks. A cell passes only
if the outcome is `ok` and every check passes (docs/evals.md, "The run").

What a cell stores is bounded: an output over `MAX_STORED_OUTPUT_BYTES`
(256 KiB as JSON) is graded whole, in memory, and stored as a placeholder
object, `{"$truncated": {"bytes", "sha256", "head"}}` (its size and the
sha256 of its JSON text, and the first `STORED_HEAD_CHARS` characters of
that text), so agents answering megabytes cannot grow the store by
megabytes a cell.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from opentelemetry.trace import Tracer

from agents import CallLimits, Executor, Manifest, Outcome
from evals.checks import CaseGrade, PdfPool, grade
from evals.fixtures import FixtureCache, expand
from evals.suites import Case, Suite
from schema import make_validator
from schema.documents import explain, format_path
from schema.errors import SuiteError
from schema.jsontext import JSONValue, dumps

MAX_STORED_OUTPUT_BYTES: Final = 256 * 1024
STORED_HEAD_CHARS: Final = 1024


@dataclass(frozen=True)
class PreparedCase:
    """A case with its fixtures expanded: what the agent gets and the checks see."""

    case: Case
    input: Any
    expected: Any


@dataclass(frozen=True)
class CellResult:
    case: Case
    repetition: int
    outcome: Outcome
    grade: CaseGrade | None  # None unless the outcome was ok
    grade_ms: float | None = None  # how long grading took (None: nothing was graded)
    cached: bool = False  # `holon test --cache`: the outcome was kept, the agent not called

    @property
    def passed(self) -> bool:
        return self.outcome.ok and self.grade is not None and self.grade.passed


def prepare(
    suite: Suite,
    case: Case,
    cache: FixtureCache | None,
    *,
    input_validator: Any = None,
    input_quick: Callable[[Any], bool] | None = None,
) -> PreparedCase:
    """Expand fixtures and validate the input: a failure is the suite's fault, never the agent's.

    `input_validator` (the suite's, built once by a caller preparing many cases)
    saves building it per case; `input_quick` (`schema.quick_validity` of the
    same schema) answers "valid" without it for the common schema shapes.
    """
    where = case.source
    value = expand(case.input, suite.fixtures, cache, path=("input",), where=where)
    expected = expand(case.expected, suite.fixtures, cache, path=("expected",), where=where)
    if input_quick is not None and input_quick(value):
        return PreparedCase(case, value, expected)
    checker = input_validator or make_validator(suite.input_schema)
    for error in checker.iter_errors(value):
        message, at = explain(error)
        raise SuiteError(
            f"case {case.id!r}: the expanded input does not match the suite's input schema: "
            f"{message}",
            location=where,
            details={"path": format_path(("input", *at))},
        )
    return PreparedCase(case, value, expected)


def output_fits(outcome: Outcome) -> bool:
    """Whether the outcome's output is known to fit a cell without writing it out."""
    size = outcome.output_bytes
    return not outcome.ok or (size is not None and size <= MAX_STORED_OUTPUT_BYTES)


def stored_output(outcome: Outcome) -> JSONValue:
    """What a cell stores of its outcome's output: the output, or a placeholder past the bound.

    Writing out an output the executor could not bound costs what writing it
    costs: callers on an event loop check `output_fits` first.
    """
    if not outcome.ok:
        return None
    if output_fits(outcome):
        return outcome.output
    text = dumps(outcome.output)
    data = text.encode()
    if len(data) <= MAX_STORED_OUTPUT_BYTES:
        return outcome.output
    return {
        "$truncated": {
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
            "head": text[:STORED_HEAD_CHARS],
        }
    }


def call_limits(suite: Suite, *, unreachable_retries: int = 0) -> CallLimits:
    return CallLimits(
        max_cost_usd=suite.limits.max_cost_usd,
        timeout_s=suite.limits.timeout_s,
        unreachable_retries=unreachable_retries,
    )


# Every cell of a suite runs under the same limits (CallLimits is immutable):
# built once per suite object and retry count, not validated again per cell.
_LIMITS: dict[tuple[int, int], tuple[Suite, CallLimits]] = {}


def _limits_for(suite: Suite, unreachable_retries: int) -> CallLimits:
    key = (id(suite), unreachable_retries)
    known = _LIMITS.get(key)
    if known is not None and known[0] is suite:
        return known[1]
    if len(_LIMITS) >= 64:
        _LIMITS.clear()
    limits = call_limits(suite, unreachable_retries=unreachable_retries)
    _LIMITS[key] = (suite, limits)
    return limits


def grading_document(prepared: PreparedCase, outcome: Outcome) -> dict[str, Any]:
    usage = outcome.usage
    return graded_values(
        prepared,
        outcome.output,
        input_tokens=usage.input_tokens if usage else None,
        output_tokens=usage.output_tokens if usage else None,
        cost_usd=outcome.cost_usd,
    )


def graded_values(
    prepared: PreparedCase,
    output: Any,
    *,
    input_tokens: int | None,
    output_tokens: int | None,
    cost_usd: Any,
) -> dict[str, Any]:
    """What the checks of a cell read: of a call just made, or of a report's cell graded
    again (evals._import)."""
    return {
        "input": prepared.input,
        "output": output,
        "expected": prepared.expected,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost_usd": cost_usd,
        },
        "case": {
            "id": prepared.case.id,
            "split": prepared.case.split,
            "tags": list(prepared.case.tags),
        },
    }


async def run_cell(
    executor: Executor,
    agent: Manifest,
    suite: Suite,
    prepared: PreparedCase,
    *,
    repetition: int = 0,
    pdf: PdfPool | None = None,
    secret: str | None = None,
    request_id: str | None = None,
    unreachable_retries: int = 0,
    tracer: Tracer | None = None,
) -> CellResult:
    outcome = await executor.execute(
        agent,
        suite.capability,
        prepared.input,
        _limits_for(suite, unreachable_retries),
        secret=secret,
        request_id=request_id,
        output_schema=suite.output_schema,  # what the cell grades, as a live call asks
        tracer=tracer,  # a span per attempt, children of the cell's
    )
    return await grade_cell(prepared, outcome, repetition=repetition, pdf=pdf)


async def grade_cell(
    prepared: PreparedCase,
    outcome: Outcome,
    *,
    repetition: int = 0,
    pdf: PdfPool | None = None,
    cached: bool = False,
) -> CellResult:
    """Grade an outcome however it was had: from the agent, or (`holon test --cache`) kept."""
    graded: CaseGrade | None = None
    grade_ms: float | None = None
    if outcome.ok:
        started = time.perf_counter()
        document = grading_document(prepared, outcome)
        if any(check.uses_pdf for check in prepared.case.checks):
            # Reading a PDF waits on the reader pool: off the event loop, so
            # other cells keep their deadlines.
            graded = await asyncio.to_thread(grade, prepared.case.checks, document, pdf=pdf)
        else:
            # Plain grading takes a fraction of a millisecond: a thread hop
            # would cost more than it saves.
            graded = grade(prepared.case.checks, document, pdf=pdf)
        grade_ms = (time.perf_counter() - started) * 1000
    return CellResult(prepared.case, repetition, outcome, graded, grade_ms, cached)
