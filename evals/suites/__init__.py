"""Suites: documents, cases, holdouts and their digests (docs/suites.md).

The installing names (`install_suite`, `load_installed`, ...) are loaded on
first use (PEP 562): they need the store (`records`, SQLAlchemy), and
`holon test` on a suite directory loads suites without one.
"""

from typing import TYPE_CHECKING

from evals.suites._contract import Contract, Violation, contract_from_files
from evals.suites._extensions import (
    EXTENSION_KINDS,
    ExtensionFile,
    TrustStore,
    extension_files,
)
from evals.suites._identity import (
    SuiteDigests,
    case_identity,
    case_text,
    cases_text,
    generated_case,
    generated_holdout,
    holdout_case_digest,
    holdout_seed,
    holdout_text_digest,
    public_case_digest,
    suite_digests,
)
from evals.suites._load import OUTPUT_SCHEMA_CHECK, SUITE_FILE, load_suite, suite_file
from evals.suites._model import (
    DEFAULT_ROTATE_MIN_HOURS,
    Case,
    HoldoutGenerator,
    HoldoutPool,
    Rotation,
    Split,
    Suite,
    SuiteLimits,
)
from evals.suites._pool import epoch_holdout, pool_exhausted
from schema import lazy_names

if TYPE_CHECKING:
    from evals.suites._install import (
        describe,
        install_suite,
        load_installed,
        materialise,
        public_files,
        suite_files,
    )

__all__ = [
    "DEFAULT_ROTATE_MIN_HOURS",
    "EXTENSION_KINDS",
    "Case",
    "Contract",
    "ExtensionFile",
    "HoldoutGenerator",
    "HoldoutPool",
    "OUTPUT_SCHEMA_CHECK",
    "SUITE_FILE",
    "Rotation",
    "Split",
    "Suite",
    "SuiteDigests",
    "SuiteLimits",
    "TrustStore",
    "Violation",
    "case_identity",
    "case_text",
    "cases_text",
    "contract_from_files",
    "describe",
    "epoch_holdout",
    "extension_files",
    "generated_case",
    "generated_holdout",
    "holdout_case_digest",
    "holdout_text_digest",
    "holdout_seed",
    "install_suite",
    "load_installed",
    "load_suite",
    "materialise",
    "pool_exhausted",
    "public_case_digest",
    "public_files",
    "suite_digests",
    "suite_file",
    "suite_files",
]

_STORE_NAMES = frozenset(
    ("describe", "install_suite", "load_installed", "materialise", "public_files", "suite_files")
)


__getattr__, __dir__ = lazy_names(
    __name__, dict.fromkeys(_STORE_NAMES, "evals.suites._install"), __all__
)
