"""Predicates on sizes and kinds: `length`, `count`, `exists`, `type`.

`count` and `exists` look at how many nodes a path matched, so a singular
path with nothing there is a count of 0, not a `no-match` (except `exists:
true`, whose whole point is that something is there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from evals.checks._metrics import Metric
from evals.checks._paths import CompiledPath
from evals.checks._predicates import Body, ValuePredicate, operand_paths, self_offending
from evals.checks._render import describe_kind, short
from evals.checks._results import FAIL, HIDDEN, NO_MATCH, PASS, TYPE_MISMATCH, CheckOutcome
from evals.checks._subject import Context, Operand, Subject
from evals.checks._values import MISSING, is_integer, is_number, size_of


class SizeSpec:
    """`n`, `{path: …}` (a whole number in the document) or `{min, max}`."""

    __slots__ = ("exact", "high", "low")

    def __init__(self, exact: Operand | None, low: int | None, high: int | None) -> None:
        self.exact = exact
        self.low = low
        self.high = high

    def resolve(self, context: Context) -> Any:
        """The exact size wanted (an int), None for a range, MISSING, or a bad value as is."""
        if self.exact is None:
            return None
        value = self.exact.value(context)
        if value is MISSING or isinstance(value, bool) or not is_integer(value) or value < 0:
            return value
        return int(value)

    def holds(self, size: int, exact: int | None) -> bool:
        if exact is not None:
            return size == exact
        return (self.low is None or size >= self.low) and (self.high is None or size <= self.high)

    def text(self, exact: Any) -> str:
        if exact is not None and exact is not HIDDEN:
            return short(exact)
        if self.low is not None and self.high is not None:
            return f"{self.low} to {self.high}"
        if self.low is not None:
            return f"≥ {self.low}"
        return f"≤ {self.high}"

    def problem(self, body: Body, exact: Any, actual: Any) -> CheckOutcome | None:
        """The outcome when the wanted size itself is missing or not a whole number."""
        if exact is None or isinstance(exact, int) and not isinstance(exact, bool):
            return None
        where = self.exact.text if self.exact is not None else "the operand"
        if exact is MISSING:
            return CheckOutcome(
                NO_MATCH, body, actual, HIDDEN, detail=f"nothing at {where} (the size)"
            )
        return CheckOutcome(
            TYPE_MISMATCH,
            body,
            actual,
            exact,
            detail=f"expected value at {where} is {describe_kind(exact)}, not a whole number",
        )


class Length(ValuePredicate):
    key = "length"
    wants = "a string, array or object"

    def __init__(
        self,
        size: SizeSpec,
        normalize: Callable[[str], str] | None = None,
        normalize_names: Sequence[str] = (),
    ) -> None:
        super().__init__(None, normalize, normalize_names)
        self.size = size

    def paths(self) -> list[CompiledPath]:
        return operand_paths(self.size.exact)

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        if subject.value is MISSING:
            return super().run(context, subject)
        exact = self.size.resolve(context)
        problem = self.size.problem(self, exact, subject.value)
        if problem is not None:
            return problem
        return self.apply(subject, subject.value, HIDDEN if exact is None else exact)

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        size = size_of(actual)
        if size is None:
            return self.mismatch(subject, actual, expected)
        exact = None if expected is HIDDEN else expected
        return self.outcome_of(self.size.holds(size, exact), subject, actual, expected)

    def sentence(self, actual: Any, expected: Any) -> str:
        return f"expected length {self.size.text(expected)}, got length {size_of(actual)}"


# How many nodes a path matched: a measurement, neither more nor fewer is better.
COUNT = Metric("count", "count", None, "nodes the path matched")


class Count(Body):
    """The number of matched nodes (0 or 1 for a singular path); never `no-match` for that."""

    key = "count"
    metrics = (COUNT,)

    def __init__(self, size: SizeSpec) -> None:
        self.size = size

    def paths(self) -> list[CompiledPath]:
        return operand_paths(self.size.exact)

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        count = subject.count
        exact = self.size.resolve(context)
        problem = self.size.problem(self, exact, HIDDEN)
        if problem is not None:
            return problem
        shown = HIDDEN if exact is None else exact
        status = PASS if self.size.holds(count, exact) else FAIL
        return CheckOutcome(status, self, HIDDEN, shown, metrics={COUNT.name: count})

    def describe(self, outcome: CheckOutcome) -> str:
        count = (outcome.metrics or {}).get(COUNT.name, 0)
        wanted = self.size.text(outcome.expected)
        noun = "node" if wanted == "1" else "nodes"
        return f"expected {wanted} {noun}, got {count}"


class Exists(Body):
    """`exists: true` matches at least one node (null counts); `exists: false` none."""

    key = "exists"
    metrics = (COUNT,)

    def __init__(self, wanted: bool) -> None:
        self.wanted = wanted

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        count = subject.count
        if (count > 0) == self.wanted:
            return CheckOutcome(PASS, self, HIDDEN, HIDDEN, metrics={COUNT.name: count})
        status = NO_MATCH if self.wanted else FAIL
        offending = self_offending(subject) if count else ()
        if not subject.singular and subject.locations:
            offending = tuple(subject.locations)
        return CheckOutcome(
            status, self, HIDDEN, HIDDEN, metrics={COUNT.name: count}, offending=offending
        )

    def describe(self, outcome: CheckOutcome) -> str:
        count = (outcome.metrics or {}).get(COUNT.name, 0)
        found = f"found {count} node" + ("" if count == 1 else "s")
        if self.wanted:
            return found if count else "expected a node, found none"
        return f"expected no node, {found}" if count else "found no node"


TYPE_NAMES = ("array", "boolean", "integer", "null", "number", "object", "string")


def has_type(value: Any, name: str) -> bool:
    """JSON Schema's types: `1.0` is an integer, a boolean is not a number."""
    if name == "string":
        return isinstance(value, str)
    if name == "integer":
        return is_integer(value)
    if name == "number":
        return is_number(value)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "array":
        return isinstance(value, list)
    if name == "object":
        return isinstance(value, dict)
    return value is None


class Type(ValuePredicate):
    key = "type"

    def __init__(self, names: Sequence[str]) -> None:
        super().__init__()
        self.names = tuple(names)

    def shown_expected(self) -> Any:
        return HIDDEN

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        ok = any(has_type(actual, name) for name in self.names)
        outcome = self.outcome_of(ok, subject, actual, HIDDEN)
        if not ok:
            outcome.status = TYPE_MISMATCH
        return outcome

    def sentence(self, actual: Any, expected: Any) -> str:
        text = describe_kind(actual)
        if is_integer(actual) and text.startswith("number "):
            text = "integer " + text[len("number ") :]
        return f"expected {' or '.join(self.names)}, got {text}"
