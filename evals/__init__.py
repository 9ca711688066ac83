"""Evals: the check DSL, suites, fixtures, the runner and scores.

Imports `schema`, `agents` and `records`, never `gateway`.
"""

from evals._cell import CellResult, PreparedCase, call_limits, prepare, run_cell
from evals._eval import probe, resumable, resume, start, work
from evals._finish import finish, summarise
from evals._plan import Plan, PlannedSuite, make_plan, rebuild
from evals._practice import PracticeReport, manifest_agent, practice, practice_agent
from evals._worker import WorkerStats, run_worker
from evals.fixtures import FixtureCache
from evals.suites import Suite, load_suite

__all__ = [
    "CellResult",
    "Plan",
    "PlannedSuite",
    "FixtureCache",
    "PracticeReport",
    "PreparedCase",
    "Suite",
    "WorkerStats",
    "call_limits",
    "finish",
    "load_suite",
    "make_plan",
    "manifest_agent",
    "practice",
    "practice_agent",
    "prepare",
    "probe",
    "rebuild",
    "resumable",
    "resume",
    "run_cell",
    "run_worker",
    "start",
    "summarise",
    "work",
]
