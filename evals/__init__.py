"""Evals: the check DSL, suites, fixtures, the runner and scores.

Imports `schema`, `agents` and `records`, never `gateway`.

The names below are loaded on first use (PEP 562): the runner, plan, worker
and finish modules import `records` (SQLAlchemy and every model), which
`holon test` on a suite directory and every `--help` never need. A name is
imported from its module the first time it is read, then kept here, so
`from evals import X` and `evals.X` behave as before.
"""

from typing import TYPE_CHECKING

from schema import lazy_names

if TYPE_CHECKING:
    from evals._canary import canary_case, has_canaries
    from evals._catalog import catalog, fixture_generators
    from evals._cell import CellResult, PreparedCase, call_limits, prepare, run_cell
    from evals._drift import (
        DriftEvidence,
        DriftState,
        drift_reference,
        first_drift,
        live_score,
        simulated_failures,
    )
    from evals._eval import imported_refusal, probe, resumable, resume, start, work
    from evals._evidence import admits_lower, eval_score_lower
    from evals._finish import finish, summarise
    from evals._import import MAX_REPORT_BYTES, import_report
    from evals._integrity import (
        author_digests,
        author_record,
        keyed_digest,
        recut_warning,
        rotation_warning,
    )
    from evals._last_run import LastRuns
    from evals._plan import Plan, PlannedSuite, make_plan, rebuild
    from evals._practice import PracticeReport, manifest_agent, practice, practice_agent
    from evals._processes import check_processes, max_processes
    from evals._responses import ResponseCache
    from evals._visible import visible
    from evals._worker import WorkerStats, run_worker
    from evals.fixtures import FixtureCache
    from evals.suites import Suite, load_suite

__all__ = [
    "CellResult",
    "DriftEvidence",
    "DriftState",
    "FixtureCache",
    "LastRuns",
    "MAX_REPORT_BYTES",
    "Plan",
    "PlannedSuite",
    "PracticeReport",
    "PreparedCase",
    "ResponseCache",
    "Suite",
    "WorkerStats",
    "admits_lower",
    "author_digests",
    "author_record",
    "call_limits",
    "canary_case",
    "catalog",
    "check_processes",
    "drift_reference",
    "eval_score_lower",
    "finish",
    "first_drift",
    "fixture_generators",
    "has_canaries",
    "import_report",
    "imported_refusal",
    "keyed_digest",
    "live_score",
    "load_suite",
    "make_plan",
    "manifest_agent",
    "max_processes",
    "practice",
    "practice_agent",
    "prepare",
    "probe",
    "rebuild",
    "recut_warning",
    "resumable",
    "resume",
    "run_cell",
    "rotation_warning",
    "run_worker",
    "simulated_failures",
    "start",
    "summarise",
    "visible",
    "work",
]

# Where each public name lives; must list exactly __all__ (tests/evals/test_lazy.py).
_HOMES: dict[str, str] = {
    "CellResult": "evals._cell",
    "PreparedCase": "evals._cell",
    "call_limits": "evals._cell",
    "prepare": "evals._cell",
    "run_cell": "evals._cell",
    "imported_refusal": "evals._eval",
    "probe": "evals._eval",
    "resumable": "evals._eval",
    "resume": "evals._eval",
    "start": "evals._eval",
    "work": "evals._eval",
    "finish": "evals._finish",
    "MAX_REPORT_BYTES": "evals._import",
    "import_report": "evals._import",
    "canary_case": "evals._canary",
    "catalog": "evals._catalog",
    "fixture_generators": "evals._catalog",
    "visible": "evals._visible",
    "has_canaries": "evals._canary",
    "drift_reference": "evals._drift",
    "DriftEvidence": "evals._drift",
    "DriftState": "evals._drift",
    "first_drift": "evals._drift",
    "live_score": "evals._drift",
    "simulated_failures": "evals._drift",
    "admits_lower": "evals._evidence",
    "author_digests": "evals._integrity",
    "author_record": "evals._integrity",
    "eval_score_lower": "evals._evidence",
    "keyed_digest": "evals._integrity",
    "recut_warning": "evals._integrity",
    "rotation_warning": "evals._integrity",
    "LastRuns": "evals._last_run",
    "ResponseCache": "evals._responses",
    "summarise": "evals._finish",
    "Plan": "evals._plan",
    "PlannedSuite": "evals._plan",
    "make_plan": "evals._plan",
    "rebuild": "evals._plan",
    "check_processes": "evals._processes",
    "max_processes": "evals._processes",
    "PracticeReport": "evals._practice",
    "manifest_agent": "evals._practice",
    "practice": "evals._practice",
    "practice_agent": "evals._practice",
    "WorkerStats": "evals._worker",
    "run_worker": "evals._worker",
    "FixtureCache": "evals.fixtures",
    "Suite": "evals.suites",
    "load_suite": "evals.suites",
}


__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
