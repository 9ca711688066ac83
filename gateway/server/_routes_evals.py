"""Routes over evals: start (worked by the gateway's workers), import, follow, resume,
report, compare; each from the operation table (gateway/operations/_evals.py and
_eval_import.py)."""

from __future__ import annotations

from gateway.operations import (
    EVALS_CANCEL,
    EVALS_COMPARE,
    EVALS_IMPORT,
    EVALS_LIST,
    EVALS_REPORT,
    EVALS_RESUME,
    EVALS_SHOW,
    EVALS_START,
)
from gateway.web import endpoint

ENDPOINTS = [
    endpoint(EVALS_START),
    endpoint(EVALS_IMPORT),
    endpoint(EVALS_LIST),
    endpoint(EVALS_SHOW),
    endpoint(EVALS_RESUME),
    endpoint(EVALS_CANCEL),
    endpoint(EVALS_REPORT),
    endpoint(EVALS_COMPARE),
]
