"""Compiled checks and the bodies that hold other checks: all/any/not, each/some/none."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass, field
from fractions import Fraction
from typing import Any

from evals.checks._metrics import Metric
from evals.checks._paths import CompiledPath, NodePath
from evals.checks._predicates import Body, location_text, noted
from evals.checks._render import short
from evals.checks._results import (
    FAIL,
    NO_MATCH,
    PASS,
    CheckOutcome,
    CheckResult,
    CheckStatus,
    metric,
)
from evals.checks._subject import Context, Subject, node_subject, subject_of
from evals.checks._values import MISSING
from schema.errors import Location

_CLOCK_EVERY = 256  # quantified nodes between two looks at the clock


@dataclass(slots=True, eq=False)
class CompiledCheck:
    """One check, ready to grade: its name, its path (None inherits), its body.

    `definition` is the check as written (for digests); `source` is where it
    was written (for `suite.yaml:42` in the CLI block).
    """

    name: str
    predicate: str
    path: CompiledPath | None
    body: Body
    _: KW_ONLY
    critical: bool = False
    source: Location | None = None
    definition: Any = None
    # Whether grading may read a PDF (some path in this check steps into `.pdf`).
    uses_pdf: bool = field(init=False)

    def __post_init__(self) -> None:
        self.uses_pdf = any(path.uses_pdf for path in self.paths())

    def __repr__(self) -> str:
        return f"CompiledCheck({self.name!r})"

    def paths(self) -> list[CompiledPath]:
        found = [self.path] if self.path is not None else []
        found.extend(self.body.paths())
        return found

    @property
    def reference_free(self) -> bool:
        """Whether the check reads only the call's `input` and `output` (no `expected`,
        case, usage or PDF): one a live answer can be graded by, with no answer known."""
        paths = self.paths()
        return (
            bool(paths)
            and not self.uses_pdf
            and all(p.reads_only in ("input", "output") for p in paths)
        )

    def evaluate(self, context: Context, inherited: Subject) -> tuple[CheckOutcome, Subject]:
        subject = subject_of(self.path, context) if self.path is not None else inherited
        return self.body.run(context, subject), subject

    def grade(self, context: Context) -> CheckResult:
        path = self.path
        if path is None:  # a combinator whose children all have their own path
            outcome = self.body.run(context, Subject(True, MISSING, None, None, context.root))
            return CheckResult(
                self.name, self.predicate, outcome, None, None, self.critical, self.source
            )
        subject = subject_of(path, context)
        outcome = self.body.run(context, subject)
        locations = subject.locations
        return CheckResult(
            self.name,
            self.predicate,
            outcome,
            path.text,
            None if locations is None else len(locations),
            self.critical,
            self.source,
        )

    def failed(self, detail: str, status: CheckStatus = FAIL) -> CheckResult:
        """This check's result when grading it stopped short (a limit, or `ERROR`: it
        raised): a check that does not pass, never a crashed run."""
        return CheckResult(
            self.name,
            self.predicate,
            CheckOutcome(status, _Fixed(), detail=detail),
            path=self.path.text if self.path is not None else None,
            critical=self.critical,
            source=self.source,
        )


class _Fixed(Body):
    def describe(self, outcome: CheckOutcome) -> str:
        return outcome.detail or outcome.status


def _child_paths(children: Sequence[CompiledCheck]) -> list[CompiledPath]:
    found: list[CompiledPath] = []
    for child in children:
        found.extend(child.paths())
    return found


def _failed(
    body: Body,
    status: CheckStatus,
    detail: str,
    failures: Sequence[tuple[CompiledCheck, CheckOutcome]],
) -> CheckOutcome:
    """A combination's failure: each failed child noted, and all that it found offending."""
    offending: list[NodePath | str] = []
    for _, outcome in failures:
        offending.extend(outcome.offending)
    return CheckOutcome(
        status,
        body,
        detail=detail,
        notes=noted(
            "failed", [f"{child.name}: {outcome.describe()}" for child, outcome in failures]
        ),
        offending=offending,
    )


class AllOf(Body):
    key = "all"

    def __init__(self, children: Sequence[CompiledCheck]) -> None:
        self.children = tuple(children)

    def paths(self) -> list[CompiledPath]:
        return _child_paths(self.children)

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        failures = []
        for child in self.children:
            outcome, _ = child.evaluate(context, subject)
            if not outcome.passed:
                failures.append((child, outcome))
        if not failures:
            return CheckOutcome(PASS, self, detail=f"all {len(self.children)} checks passed")
        detail = f"{len(failures)} of {len(self.children)} checks failed"
        return _failed(self, failures[0][1].status, detail, failures)


class AnyOf(AllOf):
    key = "any"

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        failures = []
        for child in self.children:
            outcome, _ = child.evaluate(context, subject)
            if outcome.passed:
                return CheckOutcome(PASS, self, detail=f"{child.name} passed")
            failures.append((child, outcome))
        statuses = {outcome.status for _, outcome in failures}
        status = statuses.pop() if len(statuses) == 1 else FAIL
        return _failed(self, status, f"none of {len(self.children)} checks passed", failures)


class NotOf(AllOf):
    key = "not"

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        child = self.children[0]
        outcome, _ = child.evaluate(context, subject)
        if outcome.passed:
            return CheckOutcome(
                FAIL,
                self,
                detail=f"expected {child.name} not to hold, but it did: {outcome.describe()}",
            )
        return CheckOutcome(PASS, self, detail=f"{child.name} does not hold: {outcome.describe()}")


def _described(failed: Sequence[tuple[NodePath, CheckOutcome]]) -> list[str]:
    return [f"{location_text(at)}: {outcome.describe()}" for at, outcome in failed]


# How many nodes a quantifier met is the agent's answer's size, not its quality;
# the share that passed is (under `mostly`, the share the check is judged by).
NODES = Metric("nodes", "count", None, "nodes the quantifier tested")
PASSED_NODES = Metric("passed", "count", None, "nodes that passed the inner check")
PASS_RATE = Metric("pass_rate", "ratio", "maximize", "share of the nodes that passed")


class Quantifier(Body):
    """`each`, `some`, `none` over the nodes of a non-singular path.

    No nodes is `no-match` unless `allow_empty`, which makes all three pass.
    `mostly` (beside `each`) passes when at least that fraction of nodes pass.
    """

    metrics = (NODES, PASSED_NODES, PASS_RATE)

    def __init__(
        self,
        key: str,
        inner: Body,
        *,
        allow_empty: bool = False,
        mostly: Fraction | None = None,
    ) -> None:
        self.key = key  # type: ignore[misc]
        self.inner = inner
        self.allow_empty = allow_empty
        self.mostly = mostly

    def paths(self) -> list[CompiledPath]:
        return self.inner.paths()

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        locations = subject.locations or []
        if not locations:
            if self.allow_empty:
                return CheckOutcome(
                    PASS, self, detail="no nodes (allowed)", metrics={NODES.name: 0}
                )
            return CheckOutcome(
                NO_MATCH, self, detail=f"no nodes at {location_text(subject.location)}"
            )
        root = context.root
        passed: list[tuple[NodePath, Any]] = []
        failed: list[tuple[NodePath, CheckOutcome]] = []
        for index, (location, value) in enumerate(zip(locations, subject.value, strict=True)):
            if index and not index % _CLOCK_EVERY:
                context.meter.check_clock()
            outcome = self.inner.run(context, node_subject(location, value, root))
            if outcome.passed:
                passed.append((location, value))
            else:
                failed.append((location, outcome))
        total = len(locations)
        metrics: dict[str, Any] = {NODES.name: total, PASSED_NODES.name: len(passed)}
        # A failure notes the nodes that broke `each` or `some`, or that `none` found.
        if self.key == "each":
            if self.mostly is not None:
                rate = Fraction(len(passed), total)
                metrics[PASS_RATE.name] = metric(rate)
                ok = rate >= self.mostly
                detail = (
                    f"{len(passed)} of {total} nodes passed ({short(metric(rate))}), "
                    f"need ≥ {short(metric(self.mostly))}"
                )
            else:
                ok = not failed
                detail = (
                    f"all {total} nodes passed" if ok else f"{len(failed)} of {total} nodes failed"
                )
            noted_as, lines, offending = "failed", _described(failed), [at for at, _ in failed]
        elif self.key == "some":
            ok = bool(passed)
            detail = (
                f"{len(passed)} of {total} nodes passed" if ok else f"none of {total} nodes passed"
            )
            noted_as, lines, offending = "failed", _described(failed), []
        else:
            ok = not passed
            detail = (
                f"none of {total} nodes passed"
                if ok
                else f"{len(passed)} of {total} nodes passed, expected none"
            )
            lines = [f"{location_text(at)} = {short(value)}" for at, value in passed]
            noted_as, offending = "passed", [at for at, _ in passed]
        return CheckOutcome(
            PASS if ok else FAIL,
            self,
            detail=detail,
            notes=[] if ok else noted(noted_as, lines),
            offending=[] if ok else offending,
            metrics=metrics,
        )
