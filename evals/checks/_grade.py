"""Grading one case: every compiled check against one document, deterministically.

The document is `{"input", "output", "expected", "usage", "case": {"id", "split", "tags"}}`.
A check that hits a limit or raises fails with the reason as its detail (a
check never crashes the run); only the wall-clock guard escapes, as
`GradingTimeout`, because it says something is wrong with us, not the agent.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from agents import printable
from evals.checks._compile import compile_path
from evals.checks._limits import (
    CURRENT_METER,
    DEFAULT_TIMEOUT_S,
    LimitExceeded,
    Meter,
)
from evals.checks._paths import Node, PdfUnreadable, evaluate
from evals.checks._pdfview import PdfPool, PdfViews
from evals.checks._results import ERROR, CaseGrade, CheckResult
from evals.checks._structure import CompiledCheck
from evals.checks._subject import Context
from schema.errors import GradingTimeout

logger = logging.getLogger(__name__)


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def grade(
    checks: Sequence[CompiledCheck],
    document: Any,
    *,
    pdf: PdfPool | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> CaseGrade:
    """Grade one document; the case passes iff every check passes.

    `pdf` reads the PDFs that paths step into (`.pdf`); without one, a
    private pool is started when a PDF is first needed. Raises
    `GradingTimeout` (an EnvironmentFault) if the case outlasts `timeout_s`.
    """
    if not checks:
        raise ValueError("a case with no checks measures nothing (refuse it when loading)")
    meter = Meter(timeout_s)
    token = CURRENT_METER.set(meter)
    views = PdfViews(pdf, meter) if any(check.uses_pdf for check in checks) else None
    context = Context(document, views, meter)
    results: list[CheckResult] = []
    try:
        for check in checks:
            results.append(_grade_one(check, context))
            meter.check_clock()
    finally:
        CURRENT_METER.reset(token)
        if views is not None:
            views.close()
    return CaseGrade(tuple(results))


def _grade_one(check: CompiledCheck, context: Context) -> CheckResult:
    try:
        return check.grade(context)
    except GradingTimeout:
        raise
    except (LimitExceeded, PdfUnreadable) as exc:
        return check.failed(_one_line(str(exc)))
    except RecursionError:
        return check.failed("the value nests too deeply to compare")
    except Exception as exc:
        # A check that raises is an error, never a crashed run nor a verdict on the answer:
        # the cell does not pass, and reports count it apart (docs/checks.md, "Statuses").
        # The message may quote the agent's answer: escaped and bounded for a terminal.
        reason = printable(str(exc))
        logger.warning("check %r raised %s: %s", check.name, type(exc).__name__, reason)
        return check.failed(_one_line(f"check raised {type(exc).__name__}: {exc}"), ERROR)


def query(text: str, value: Any, *, pdf: PdfPool | None = None) -> list[Node]:
    """The nodes a JSONPath query matches in `value`, with normalized paths (`holon path`).

    Raises `CheckError` (with a caret) for a bad query, `LimitExceeded` past
    the node cap, `PdfUnreadable` for a `.pdf` step into a broken PDF.
    """
    path = compile_path(text)
    views = PdfViews(pdf, None) if path.uses_pdf else None
    try:
        return evaluate(path, value, views)
    finally:
        if views is not None:
            views.close()
