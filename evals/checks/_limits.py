"""Limits on what grading may cost, and the guard that enforces the one that is not deterministic.

Agent output is hostile, so every size a predicate works on is capped. The
caps are numbers, not timings, so a result is the same on every machine: a
value over a cap fails its check with a detail naming the cap. The only
clock-based limit is `Meter`'s deadline, a guard against our own bugs;
tripping it raises `GradingTimeout`, an infrastructure error that is retried,
never a grade.
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from typing import Any, Final

from schema.errors import GradingTimeout

MAX_NODES: Final = 100_000
"""Nodes one path may match."""

MAX_PATH_STEPS: Final = 500_000
"""Nodes the JSONPath engine may visit and filter evaluations it may make for one path.

Nested descendant filters (`$..[?count(@..*) > 0]`) are quadratic: this is
what keeps them from running into the wall-clock guard.
"""

MAX_STRING_CHARS: Final = 1_000_000
"""Characters a string predicate, a normaliser or a regex may look at."""

MAX_ARRAY_ITEMS: Final = 100_000
"""Items a list predicate (membership, multiset, F1) may look at."""

MAX_SIMILAR_CHARS: Final = 10_000
"""Characters `similar` compares (Levenshtein is quadratic in the worst case)."""

DEFAULT_TIMEOUT_S: Final = 2.0
"""Wall-clock guard per graded case."""

_CHECK_EVERY: Final = 1024  # filter steps between two looks at the clock


class LimitExceeded(Exception):
    """A deterministic limit was reached; the check fails with this message as its detail."""


class Meter:
    """The per-case budget: the deadline and the filter-step count of the current path."""

    __slots__ = ("deadline", "steps", "timeout_s")

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.steps = 0

    def check_clock(self) -> None:
        if time.monotonic() > self.deadline:
            raise GradingTimeout(
                f"grading one case took longer than {self.timeout_s:g} s",
                hint="a bug in the check DSL, not the agent: the cell is retried",
            )

    def step(self, count: int = 1) -> None:
        """Count engine work (nodes made, filter evaluations) for the current path."""
        before = self.steps
        self.steps = before + count
        if self.steps > MAX_PATH_STEPS:
            raise LimitExceeded(f"path needs more than {MAX_PATH_STEPS} steps to evaluate")
        if before // _CHECK_EVERY != self.steps // _CHECK_EVERY:
            self.check_clock()

    def extend(self, seconds: float) -> None:
        """Give back time spent outside our code (a PDF parse has its own limit)."""
        self.deadline += seconds


CURRENT_METER: ContextVar[Meter | None] = ContextVar("holon_checks_meter", default=None)


def string_too_long(text: str, what: str = "string") -> str | None:
    """The failure detail when `text` is over the string cap, else None."""
    if len(text) > MAX_STRING_CHARS:
        return f"{what} of {len(text)} characters is over the {MAX_STRING_CHARS}-character limit"
    return None


def array_too_long(items: list[Any], what: str = "array") -> str | None:
    if len(items) > MAX_ARRAY_ITEMS:
        return f"{what} of {len(items)} items is over the {MAX_ARRAY_ITEMS}-item limit"
    return None
