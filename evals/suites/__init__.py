"""Suites: documents, cases, holdouts and their digests (SUITES.md)."""

from evals.suites._extensions import ExtensionFile, TrustStore, extension_files
from evals.suites._identity import (
    SuiteDigests,
    case_identity,
    generated_holdout,
    holdout_case_digest,
    holdout_seed,
    public_case_digest,
    suite_digests,
)
from evals.suites._install import (
    describe,
    install_suite,
    load_installed,
    materialise,
    public_files,
    suite_files,
)
from evals.suites._load import OUTPUT_SCHEMA_CHECK, load_suite, suite_file
from evals.suites._model import Case, HoldoutGenerator, Split, Suite, SuiteLimits

__all__ = [
    "Case",
    "ExtensionFile",
    "HoldoutGenerator",
    "OUTPUT_SCHEMA_CHECK",
    "Split",
    "Suite",
    "SuiteDigests",
    "SuiteLimits",
    "TrustStore",
    "case_identity",
    "describe",
    "extension_files",
    "generated_holdout",
    "holdout_case_digest",
    "holdout_seed",
    "install_suite",
    "load_installed",
    "load_suite",
    "materialise",
    "public_case_digest",
    "public_files",
    "suite_digests",
    "suite_file",
    "suite_files",
]
