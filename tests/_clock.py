"""A clock a test moves by hand, for code that takes its clock as an argument."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FakeClock:
    """`clock()` reads `clock.now` (seconds); the test sets or advances it."""

    now: float = 1000.0

    def __call__(self) -> float:
        return self.now
