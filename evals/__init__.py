"""Evals: the check DSL, suites, fixtures, the runner and scores.

Imports `schema`, `agents` and `records`, never `gateway`.
"""

from evals._cell import CellResult, PreparedCase, call_limits, prepare, run_cell
from evals._practice import PracticeReport, practice, practice_agent
from evals.fixtures import FixtureCache
from evals.suites import Suite, load_suite

__all__ = [
    "CellResult",
    "FixtureCache",
    "PracticeReport",
    "PreparedCase",
    "Suite",
    "call_limits",
    "load_suite",
    "practice",
    "practice_agent",
    "prepare",
    "run_cell",
]
