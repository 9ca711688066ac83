"""Suites: documents, cases, holdouts and their digests (SUITES.md)."""

from evals.suites._identity import (
    SuiteDigests,
    generated_holdout,
    holdout_case_digest,
    holdout_seed,
    public_case_digest,
    suite_digests,
)
from evals.suites._load import OUTPUT_SCHEMA_CHECK, load_suite, suite_file
from evals.suites._model import Case, HoldoutGenerator, Split, Suite, SuiteLimits

__all__ = [
    "OUTPUT_SCHEMA_CHECK",
    "Case",
    "HoldoutGenerator",
    "Split",
    "Suite",
    "SuiteDigests",
    "SuiteLimits",
    "generated_holdout",
    "holdout_case_digest",
    "holdout_seed",
    "load_suite",
    "public_case_digest",
    "suite_digests",
    "suite_file",
]
