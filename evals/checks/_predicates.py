"""The predicates of docs/checks.md, each a small class: `run` decides, `describe` explains.

A predicate never fails for the shape of its definition (the compiler
validated that); at grading time it only meets the agent's values, and each
kind of surprise has a status: nothing at the path is `no-match`, a value of
the wrong kind is `type-mismatch`, anything else that does not hold is `fail`.
"""

from __future__ import annotations

import decimal
import operator
from collections import Counter
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any, ClassVar

from evals.checks._limits import array_too_long, string_too_long
from evals.checks._metrics import Metric
from evals.checks._paths import CompiledPath, NodePath, normalized_path
from evals.checks._regex import Regex
from evals.checks._render import ELLIPSIS, describe_kind, short
from evals.checks._results import (
    FAIL,
    HIDDEN,
    NO_MATCH,
    PASS,
    TYPE_MISMATCH,
    CheckOutcome,
)
from evals.checks._subject import Context, Operand, Subject
from evals.checks._values import (
    MISSING,
    freeze,
    is_number,
    json_equal,
    map_strings,
    to_decimal,
)
from schema.numbers import decimal_text

# Exact enough for any JSON number a bounded reader lets through; no traps, no rounding surprises.
EXACT = decimal.Context(
    prec=2000, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[decimal.InvalidOperation]
)

MAX_NOTES = 5
_DETAILS_MAX = 256  # details kept per predicate
_DETAIL_CHARS = 64  # the longest string a kept detail is keyed by


class Body:
    """Anything a check can do to a subject: a predicate, a combinator, a quantifier."""

    key: ClassVar[str] = ""
    # The metrics its outcomes carry, each declared beside the body that emits it.
    metrics: ClassVar[tuple[Metric, ...]] = ()

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        raise NotImplementedError

    def paths(self) -> list[CompiledPath]:
        """The paths this body reads besides its check's own (operands, children)."""
        return []

    def describe(self, outcome: CheckOutcome) -> str:
        return outcome.status


def self_offending(subject: Subject) -> tuple[NodePath | str, ...]:
    """A failed singular subject is itself the offending node."""
    return (subject.location,) if subject.singular else ()


def noted(label: str, lines: Sequence[str]) -> list[tuple[str, str]]:
    """At most MAX_NOTES labelled lines, then one `… +k more`."""
    notes = [(label, line) for line in lines[:MAX_NOTES]]
    if len(lines) > MAX_NOTES:
        notes.append((label, f"{ELLIPSIS} +{len(lines) - MAX_NOTES} more"))
    return notes


def where(subject: Subject) -> str:
    """Where a subject is: the path as written when it matched nothing, else its location."""
    if subject.value is MISSING and subject.path is not None:
        return subject.path.text
    return location_text(subject.location)


def location_text(location: NodePath | str) -> str:
    return location if isinstance(location, str) else normalized_path(location)


class ValuePredicate(Body):
    """A predicate on the subject's value, with an optional operand and `normalize:`.

    The compared (normalized) values are what the result shows.
    """

    wants: ClassVar[str] = ""  # the kind of actual value, for type mismatches

    def __init__(
        self,
        operand: Operand | None = None,
        normalize: Callable[[str], str] | None = None,
        normalize_names: Sequence[str] = (),
    ) -> None:
        self.operand = operand
        self.normalize = normalize
        self.normalize_names = tuple(normalize_names)
        # Details by the values they explain: the same few (a label, an enum, a
        # check's literal) come back from cell to cell, and rendering them was 6%
        # of an eval's work phase (bench/eval, py-spy).
        self._details: dict[tuple[Any, Any], tuple[Any, str]] = {}

    def shown_expected(self) -> Any:
        if self.operand is None:
            return HIDDEN
        return self.operand.literal if self.operand.path is None else HIDDEN

    def paths(self) -> list[CompiledPath]:
        return operand_paths(self.operand)

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        actual = subject.value
        if actual is MISSING:
            return CheckOutcome(
                NO_MATCH,
                self,
                MISSING,
                self.shown_expected(),
                detail=f"nothing at {where(subject)}",
            )
        expected: Any = MISSING
        if self.operand is not None:
            expected = self.operand.value(context)
            if expected is MISSING:
                return CheckOutcome(
                    NO_MATCH,
                    self,
                    actual,
                    HIDDEN,
                    detail=f"nothing at {self.operand.text} (the expected value)",
                )
        return self.apply(subject, actual, expected)

    def apply(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        """Normalize the (present) actual value and test it against the resolved expected one."""
        if self.normalize is not None:
            too_long = _strings_too_long(actual)
            if too_long is not None:
                return CheckOutcome(FAIL, self, actual, expected, detail=too_long)
            actual = map_strings(actual, self.normalize)
        return self.test(subject, actual, expected)

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        raise NotImplementedError

    def outcome_of(self, ok: bool, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        if ok:
            return CheckOutcome(PASS, self, actual, expected)
        return CheckOutcome(FAIL, self, actual, expected, offending=self_offending(subject))

    def mismatch(
        self, subject: Subject, actual: Any, expected: Any, wanted: str = ""
    ) -> CheckOutcome:
        return CheckOutcome(
            TYPE_MISMATCH,
            self,
            actual,
            expected,
            detail=f"expected {wanted or self.wants}, got {describe_kind(actual)}",
            offending=self_offending(subject),
        )

    def bad_operand(self, actual: Any, expected: Any, wanted: str) -> CheckOutcome:
        source = self.operand.text if self.operand is not None else ""
        at = f" at {source}" if source else ""
        return CheckOutcome(
            TYPE_MISMATCH,
            self,
            actual,
            expected,
            detail=f"expected value{at} is {describe_kind(expected)}, not {wanted}",
        )

    def not_arrays(
        self, subject: Subject, actual: Any, expected: Any, wanted: str
    ) -> CheckOutcome | None:
        """Why `actual` and `expected` (`wanted`) cannot be compared as arrays: one is
        not an array, or is too long to compare; None when they can be."""
        if not isinstance(actual, list):
            return self.mismatch(subject, actual, expected)
        if not isinstance(expected, list):
            return self.bad_operand(actual, expected, wanted)
        too_long = array_too_long(actual) or array_too_long(expected, "expected array")
        if too_long is not None:
            return CheckOutcome(FAIL, self, actual, expected, detail=too_long)
        return None

    def describe(self, outcome: CheckOutcome) -> str:
        actual, expected = outcome.actual, outcome.expected
        key = _detail_key(actual)
        if key is not None:
            # A check's literal (a list, an object) is the same object for every
            # cell: it is kept by identity, the reference held so its id stays its own.
            shown = _detail_key(expected)
            held = None
            if shown is None and type(expected) in (list, dict):
                shown, held = ("id", id(expected)), expected
            if shown is not None:
                known = self._details.get((key, shown))
                if known is not None and known[0] is held:
                    return known[1]
                text = self._describe(actual, expected)
                if len(self._details) >= _DETAILS_MAX:
                    self._details.clear()
                self._details[key, shown] = (held, text)
                return text
        return self._describe(actual, expected)

    def _describe(self, actual: Any, expected: Any) -> str:
        text = self.sentence(actual, expected)
        if self.normalize_names:
            text += f" (after {', '.join(self.normalize_names)})"
        return text

    def sentence(self, actual: Any, expected: Any) -> str:
        """The detail of a result, a function of the two values and the predicate alone."""
        return f"expected {short(expected)}, got {short(actual)}"


def _detail_key(value: Any) -> tuple[Any, Any] | None:
    """A key under which equal values get the same detail, or None (not kept).

    The type is part of it (`1`, `1.0` and `true` are equal in Python and render
    apart), a Decimal by its text (`1.0` and `1.00` are equal and render apart); a
    float zero is left out (`-0.0 == 0.0`, shown with its sign), as is any container.
    """
    kind = type(value)
    if kind is str:
        return (kind, value) if len(value) <= _DETAIL_CHARS else None
    if kind is int or kind is bool or value is None:
        return (kind, value)
    if kind is float and value != 0:
        return (kind, value)
    if kind is Decimal:  # its text tells `1.0` from `1.00`
        return (kind, str(value))
    return None


def operand_paths(*operands: Operand | None) -> list[CompiledPath]:
    return [operand.path for operand in operands if operand is not None and operand.path]


def _strings_too_long(value: Any) -> str | None:
    if isinstance(value, str):
        return string_too_long(value)
    if isinstance(value, list):
        return array_too_long(value) or next(
            (m for m in (string_too_long(v) for v in value if isinstance(v, str)) if m), None
        )
    return None


# --- equality and membership -------------------------------------------------


class Equals(ValuePredicate):
    key = "equals"

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        return self.outcome_of(json_equal(actual, expected), subject, actual, expected)


class NotEquals(ValuePredicate):
    key = "not_equals"

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        return self.outcome_of(not json_equal(actual, expected), subject, actual, expected)

    def sentence(self, actual: Any, expected: Any) -> str:
        return f"expected anything but {short(expected)}, got {short(actual)}"


class OneOf(ValuePredicate):
    key = "one_of"
    negate: ClassVar[bool] = False

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        if not isinstance(expected, list):
            return self.bad_operand(actual, expected, "an array")
        found = any(json_equal(actual, option) for option in expected)
        return self.outcome_of(found != self.negate, subject, actual, expected)

    def sentence(self, actual: Any, expected: Any) -> str:
        words = "none of" if self.negate else "one of"
        return f"expected {words} {short(expected)}, got {short(actual)}"


class NotOneOf(OneOf):
    key = "not_one_of"
    negate = True


class Contains(ValuePredicate):
    """A substring of a string, or a deep member of an array; `icontains` ignores case."""

    key = "contains"
    fold: ClassVar[bool] = False

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        if isinstance(actual, str):
            if not isinstance(expected, str):
                return self.bad_operand(actual, expected, "a string")
            too_long = string_too_long(actual)
        elif isinstance(actual, list):
            too_long = array_too_long(actual)
        else:
            return self.mismatch(subject, actual, expected, "a string or an array")
        if too_long is not None:
            return CheckOutcome(FAIL, self, actual, expected, detail=too_long)
        return self.outcome_of(self.found(actual, expected), subject, actual, expected)

    def found(self, actual: str | list[Any], expected: Any) -> bool:
        """`expected` in `actual`: a substring of a string, a deep-equal item of an array."""
        if isinstance(actual, str):
            if self.fold:
                return expected.casefold() in actual.casefold()
            return expected in actual
        if self.fold:
            needle = map_strings(expected, str.casefold)
            return any(json_equal(map_strings(x, str.casefold), needle) for x in actual)
        return any(json_equal(item, expected) for item in actual)

    def sentence(self, actual: Any, expected: Any) -> str:
        what = "a string" if isinstance(actual, str) else "an array"
        tail = " (ignoring case)" if self.fold else ""
        return f"expected {what} containing {short(expected)}{tail}, got {short(actual)}"


class IContains(Contains):
    key = "icontains"
    fold = True


class _SetPredicate(ValuePredicate):
    """Arrays compared as sets or multisets of deep-equal items, order ignored."""

    wants = "an array"

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        refused = self.not_arrays(subject, actual, expected, "an array")
        if refused is not None:
            return refused
        return self.compare(subject, actual, expected)

    def compare(self, subject: Subject, actual: list[Any], expected: list[Any]) -> CheckOutcome:
        raise NotImplementedError


class ContainsAll(_SetPredicate):
    key = "contains_all"

    def compare(self, subject: Subject, actual: list[Any], expected: list[Any]) -> CheckOutcome:
        present = {freeze(item) for item in actual}
        missing = [item for item in expected if freeze(item) not in present]
        if not missing:
            return CheckOutcome(PASS, self, actual, expected)
        detail = f"missing {len(missing)} of {len(expected)} expected items"
        return CheckOutcome(
            FAIL,
            self,
            actual,
            expected,
            detail=detail,
            notes=noted("missing", [short(item) for item in missing]),
            offending=self_offending(subject),
        )

    def sentence(self, actual: Any, expected: Any) -> str:
        return f"all {len(expected)} expected items present"


class ContainsAny(_SetPredicate):
    key = "contains_any"

    def compare(self, subject: Subject, actual: list[Any], expected: list[Any]) -> CheckOutcome:
        present = {freeze(item) for item in actual}
        found = any(freeze(item) in present for item in expected)
        return self.outcome_of(found, subject, actual, expected)

    def sentence(self, actual: Any, expected: Any) -> str:
        present = {freeze(item) for item in actual}
        hit = next((item for item in expected if freeze(item) in present), MISSING)
        if hit is MISSING:
            return f"expected any of {short(expected)}, got {short(actual)}"
        return f"found {short(hit)}"


class ContainsOnly(_SetPredicate):
    """The same multiset: every item as many times as expected, nothing else."""

    key = "contains_only"

    def compare(self, subject: Subject, actual: list[Any], expected: list[Any]) -> CheckOutcome:
        wanted = Counter(map(freeze, expected))
        if len(actual) == len(expected) and Counter(map(freeze, actual)) == wanted:
            return CheckOutcome(PASS, self, actual, expected)
        extra_at: list[int] = []
        for index, item in enumerate(actual):
            key = freeze(item)
            if wanted[key] > 0:
                wanted[key] -= 1
            else:
                extra_at.append(index)
        missing_keys = +wanted
        if not extra_at and not missing_keys:
            return CheckOutcome(PASS, self, actual, expected)
        missing = []
        for item in expected:
            key = freeze(item)
            if missing_keys[key] > 0:
                missing_keys[key] -= 1
                missing.append(item)
        locations = subject.item_locations()
        extras = [(locations[i] if i < len(locations) else "?", actual[i]) for i in extra_at]
        notes = noted("extra", [f"{location_text(loc)} = {short(value)}" for loc, value in extras])
        notes += noted("missing", [short(item) for item in missing])
        return CheckOutcome(
            FAIL,
            self,
            actual,
            expected,
            detail=f"{len(extras)} extra, {len(missing)} missing",
            notes=notes,
            offending=[loc for loc, _ in extras],
        )

    def sentence(self, actual: Any, expected: Any) -> str:
        return f"the same {len(expected)} items"


# --- numbers -------------------------------------------------------------------


class Compare(ValuePredicate):
    """`gt gte lt lte`: exact comparison of JSON numbers."""

    wants = "a number"
    symbols: ClassVar[dict[str, tuple[str, Callable[[Any, Any], bool]]]] = {
        "gt": (">", operator.gt),
        "gte": ("≥", operator.ge),
        "lt": ("<", operator.lt),
        "lte": ("≤", operator.le),
    }

    def __init__(self, key: str, operand: Operand) -> None:
        super().__init__(operand)
        self.key = key  # type: ignore[misc]  # one class for four keys
        self.symbol, self.op = self.symbols[key]

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        if not is_number(actual):
            return self.mismatch(subject, actual, expected)
        if not is_number(expected):
            return self.bad_operand(actual, expected, "a number")
        return self.outcome_of(self.op(actual, expected), subject, actual, expected)

    def sentence(self, actual: Any, expected: Any) -> str:
        return f"expected {self.symbol} {short(expected)}, got {short(actual)}"


class Between(ValuePredicate):
    """Inclusive: `between: [a, b]` holds for a ≤ x ≤ b."""

    key = "between"
    wants = "a number"

    def __init__(self, low: Operand, high: Operand) -> None:
        super().__init__()
        self.low = low
        self.high = high

    def paths(self) -> list[CompiledPath]:
        return operand_paths(self.low, self.high)

    def shown_expected(self) -> Any:
        if self.low.path is None and self.high.path is None:
            return [self.low.literal, self.high.literal]
        return HIDDEN

    def run(self, context: Context, subject: Subject) -> CheckOutcome:
        actual = subject.value
        if actual is MISSING:
            shown = self.shown_expected()
            return CheckOutcome(
                NO_MATCH, self, MISSING, shown, detail=f"nothing at {where(subject)}"
            )
        low = self.low.value(context)
        high = self.high.value(context)
        for bound, value in ((self.low, low), (self.high, high)):
            if value is MISSING:
                return CheckOutcome(
                    NO_MATCH, self, actual, HIDDEN, detail=f"nothing at {bound.text} (a bound)"
                )
        if not is_number(actual):
            return self.mismatch(subject, actual, [low, high])
        if not (is_number(low) and is_number(high)):
            return self.bad_operand(actual, [low, high], "two numbers")
        return self.outcome_of(low <= actual <= high, subject, actual, [low, high])

    def sentence(self, actual: Any, expected: Any) -> str:
        low, high = expected
        return f"expected between {short(low)} and {short(high)}, got {short(actual)}"


class Approx(ValuePredicate):
    """`|actual − X| ≤ abs` or `≤ rel·|X|`, in exact Decimal arithmetic."""

    key = "approx"
    wants = "a number"

    def __init__(self, operand: Operand, abs_tol: Decimal | None, rel_tol: Decimal | None) -> None:
        super().__init__(operand)
        self.abs_tol = abs_tol
        self.rel_tol = rel_tol

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        if not is_number(actual):
            return self.mismatch(subject, actual, expected)
        if not is_number(expected):
            return self.bad_operand(actual, expected, "a number")
        target = to_decimal(expected)
        gap = EXACT.abs(EXACT.subtract(to_decimal(actual), target))
        ok = (self.abs_tol is not None and gap <= self.abs_tol) or (
            self.rel_tol is not None and gap <= EXACT.multiply(self.rel_tol, EXACT.abs(target))
        )
        return self.outcome_of(ok, subject, actual, expected)

    def tolerance(self) -> str:
        parts = []
        if self.abs_tol is not None:
            parts.append(f"±{short(self.abs_tol)}")
        if self.rel_tol is not None:
            percent = EXACT.multiply(self.rel_tol, 100).normalize(EXACT)
            parts.append(f"±{decimal_text(percent)}%")
        return " or ".join(parts)

    def sentence(self, actual: Any, expected: Any) -> str:
        return f"expected ≈ {short(expected)} ({self.tolerance()}), got {short(actual)}"


# --- strings ---------------------------------------------------------------------


class _StringPredicate(ValuePredicate):
    wants = "a string"

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        if not isinstance(actual, str):
            return self.mismatch(subject, actual, expected)
        too_long = string_too_long(actual)
        if too_long is not None:
            return CheckOutcome(FAIL, self, actual, expected, detail=too_long)
        return self.outcome_of(self.holds(actual, expected), subject, actual, expected)

    def holds(self, actual: str, expected: Any) -> bool:
        raise NotImplementedError


class StartsWith(_StringPredicate):
    key = "starts_with"

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        if isinstance(actual, str) and not isinstance(expected, str):
            return self.bad_operand(actual, expected, "a string")
        return super().test(subject, actual, expected)

    def holds(self, actual: str, expected: Any) -> bool:
        return actual.startswith(expected)

    def sentence(self, actual: Any, expected: Any) -> str:
        return f"expected a string starting with {short(expected)}, got {short(actual)}"


class EndsWith(StartsWith):
    key = "ends_with"

    def holds(self, actual: str, expected: Any) -> bool:
        return actual.endswith(expected)

    def sentence(self, actual: Any, expected: Any) -> str:
        return f"expected a string ending with {short(expected)}, got {short(actual)}"


class Matches(_StringPredicate):
    """RE2 search; `full_match` anchors both ends."""

    key = "matches"

    def __init__(
        self,
        key: str,
        pattern: str,
        program: Regex,
        normalize: Callable[[str], str] | None = None,
        normalize_names: Sequence[str] = (),
    ) -> None:
        super().__init__(None, normalize, normalize_names)
        self.key = key  # type: ignore[misc]
        self.pattern = pattern
        self.program = program
        self.full = key == "full_match"

    def shown_expected(self) -> Any:
        return self.pattern

    def test(self, subject: Subject, actual: Any, expected: Any) -> CheckOutcome:
        return super().test(subject, actual, self.pattern)

    def holds(self, actual: str, expected: Any) -> bool:
        if self.full:
            return self.program.fullmatch(actual)
        return self.program.search(actual)

    def sentence(self, actual: Any, expected: Any) -> str:
        how = "fully matching" if self.full else "matching"
        return f"expected a string {how} /{self.pattern}/, got {short(actual)}"
