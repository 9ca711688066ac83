"""The check DSL: deterministic grading of one case (docs/checks.md).

Compile once, when a suite loads (every fault in a check is a `CheckError`
with file:line:col), then grade each case's document::

    checks = compile_checks(items, document=doc, base_path=("checks",), base_dir=suite_dir)
    with open_pdf_pool() as pdf:
        case = grade(checks, {"input": …, "output": …, "expected": …, "usage": …, "case": …},
                     pdf=pdf)
    case.passed, [r.to_json() for r in case.results]

`GRADING_RULES_VERSION` goes into `checks_digest`: it changes only when a
predicate's meaning changes.
"""

from evals.checks._cli import GradeReport, cli_grade, cli_path, render_nodes
from evals.checks._compile import (
    COMBINATORS,
    PREDICATES,
    QUANTIFIERS,
    compile_check,
    compile_checks,
    compile_path,
)
from evals.checks._grade import grade, query
from evals.checks._metrics import DIRECTIONS, Direction, Metric
from evals.checks._metrics import declared_metrics as _declared_metrics
from evals.checks._paths import CompiledPath, Node
from evals.checks._pdfview import PdfLimits, PdfPool, open_pdf_pool
from evals.checks._predicates import Body as _Body
from evals.checks._render import render_result, render_value
from evals.checks._results import STATUSES, CaseGrade, CheckResult, CheckStatus
from evals.checks._schemas import check_validator_class
from evals.checks._structure import CompiledCheck
from schema.errors import GradingTimeout

GRADING_RULES_VERSION = 1

# Every metric a predicate emits, by name (each declared beside its predicate; every
# predicate's module is imported above, through the compiler).
METRICS = _declared_metrics(_Body)

__all__ = [
    "COMBINATORS",
    "CaseGrade",
    "CheckResult",
    "CheckStatus",
    "CompiledCheck",
    "CompiledPath",
    "DIRECTIONS",
    "Direction",
    "GRADING_RULES_VERSION",
    "GradeReport",
    "GradingTimeout",
    "METRICS",
    "Metric",
    "Node",
    "PREDICATES",
    "PdfLimits",
    "PdfPool",
    "QUANTIFIERS",
    "STATUSES",
    "check_validator_class",
    "cli_grade",
    "cli_path",
    "compile_check",
    "compile_checks",
    "compile_path",
    "grade",
    "open_pdf_pool",
    "query",
    "render_nodes",
    "render_result",
    "render_value",
]
