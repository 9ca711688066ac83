"""What grading returns: one `CheckResult` per check, and the `CaseGrade` of a case.

Results are cheap to make and rendered only when read: the detail line and
the expected/actual renderings are computed on first access, so grading a
passing case costs lookups and comparisons, not string formatting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Any, Final, Protocol

from evals.checks._paths import NodePath, normalized_path
from evals.checks._render import render_value
from schema.errors import Location


class CheckStatus(StrEnum):
    """A check result's status (its JSON `status`)."""

    PASS = "pass"
    FAIL = "fail"
    NO_MATCH = "no-match"
    TYPE_MISMATCH = "type-mismatch"
    ERROR = "error"  # the check itself raised: not a verdict on the answer


PASS: Final = CheckStatus.PASS
FAIL: Final = CheckStatus.FAIL
NO_MATCH: Final = CheckStatus.NO_MATCH
TYPE_MISMATCH: Final = CheckStatus.TYPE_MISMATCH
ERROR: Final = CheckStatus.ERROR
STATUSES: Final = tuple(CheckStatus)


class _Hidden:
    """A field a result does not show (a combinator has no expected value)."""

    __slots__ = ()


HIDDEN: Final = _Hidden()


class Describer(Protocol):
    """The body that made an outcome; it writes the detail line on demand."""

    def describe(self, outcome: CheckOutcome) -> str: ...


@dataclass(slots=True, eq=False)
class CheckOutcome:
    """What a check's body found on one subject, before it is named as a check result.

    `actual` and `expected` are raw values (rendered later) or HIDDEN;
    `offending` holds node locations; `detail` is None until described.
    """

    status: CheckStatus
    body: Describer
    actual: Any = HIDDEN
    expected: Any = HIDDEN
    _: KW_ONLY
    detail: str | None = None
    offending: Sequence[NodePath | str] = ()
    notes: Sequence[tuple[str, str]] = ()
    metrics: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        return self.status == PASS

    def describe(self) -> str:
        if self.detail is None:
            try:
                self.detail = self.body.describe(self)
            except Exception as exc:  # a detail must never break reporting of a grade
                self.detail = f"{self.status} (no detail: {type(exc).__name__})"
        return self.detail


def metric(value: Fraction | int) -> int | Decimal:
    """A metric for results JSON: integers stay ints, the rest is rounded to at most 4 places.

    `4/5` is `0.8`, `23/24` is `0.9583` (half-even rounding, the same everywhere).
    """
    fraction = Fraction(value)
    if fraction.denominator == 1:
        return int(fraction)
    quotient = Decimal(fraction.numerator) / Decimal(fraction.denominator)
    rounded = quotient.quantize(Decimal("0.0001")).normalize()
    return int(rounded) if rounded == rounded.to_integral_value() else rounded


# Expected values are mostly a check's literals, the same object for every
# cell: their renderings are kept (with the value, so its id stays its own).
_SHOWN: dict[int, tuple[Any, str]] = {}
_SHOWN_MAX = 512


def _render_shown(value: Any) -> str:
    if isinstance(value, str | int | Decimal | float | bool) or value is None:
        return render_value(value)
    known = _SHOWN.get(id(value))
    if known is not None and known[0] is value:
        return known[1]
    text = render_value(value)
    if len(_SHOWN) >= _SHOWN_MAX:
        _SHOWN.clear()
    _SHOWN[id(value)] = (value, text)
    return text


def _path_text(item: NodePath | str) -> str:
    return item if isinstance(item, str) else normalized_path(item)


@dataclass(slots=True, eq=False)
class CheckResult:
    """One check's result: name, status, passed, detail, path, expected, actual, offending,
    metrics (plus predicate and critical)."""

    name: str
    predicate: str
    _outcome: CheckOutcome
    path: str | None = None
    nodes: int | None = None
    critical: bool = False
    source: Location | None = None

    @property
    def status(self) -> CheckStatus:
        return self._outcome.status

    @property
    def passed(self) -> bool:
        return self._outcome.status == PASS

    @property
    def detail(self) -> str:
        return self._outcome.describe()

    @property
    def expected(self) -> str | None:
        value = self._outcome.expected
        return None if value is HIDDEN else _render_shown(value)

    @property
    def actual(self) -> str | None:
        value = self._outcome.actual
        return None if value is HIDDEN else render_value(value)

    @property
    def offending(self) -> list[str]:
        return [_path_text(item) for item in self._outcome.offending]

    @property
    def notes(self) -> tuple[tuple[str, str], ...]:
        """Extra lines for the CLI block (`extra:`, `missing:`, `failed:` …)."""
        return tuple(self._outcome.notes)

    @property
    def metrics(self) -> dict[str, Any]:
        return dict(self._outcome.metrics or {})

    def to_json(self) -> dict[str, Any]:
        """The stored form: one check on one document gives the same JSON, byte for byte."""
        # The properties above, inlined: this runs for every check of every cell.
        outcome = self._outcome
        expected = outcome.expected
        actual = outcome.actual
        return {
            "name": self.name,
            "predicate": self.predicate,
            "status": outcome.status,
            "passed": outcome.status == PASS,
            "critical": self.critical,
            "detail": outcome.describe(),
            "path": self.path,
            "expected": None if expected is HIDDEN else _render_shown(expected),
            "actual": None if actual is HIDDEN else render_value(actual),
            "offending": [_path_text(item) for item in outcome.offending],
            "metrics": dict(outcome.metrics) if outcome.metrics else {},
            # The block rendering's extra lines (`missing:`, `wrong:` …): what a
            # stored result would otherwise lose.
            "notes": [{"label": label, "text": text} for label, text in outcome.notes],
        }

    def __repr__(self) -> str:
        return f"CheckResult({self.name!r}, {str(self.status)!r})"


@dataclass(frozen=True)
class CaseGrade:
    """Every check's result for one case; the case passes iff every check passes."""

    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.results)

    @property
    def failed(self) -> tuple[CheckResult, ...]:
        return tuple(result for result in self.results if not result.passed)

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "results": [r.to_json() for r in self.results]}
