"""Routes over evals: start (worked by the gateway's workers), import, follow, resume,
report, compare; each from the operation table (gateway/operations/_evals.py and
_eval_import.py)."""

from __future__ import annotations

from gateway import operations
from gateway.web import endpoint

ENDPOINTS = [
    endpoint(operations.EVALS_START),
    endpoint(operations.EVALS_IMPORT),
    endpoint(operations.EVALS_LIST),
    endpoint(operations.EVALS_SHOW),
    endpoint(operations.EVALS_RESUME),
    endpoint(operations.EVALS_CANCEL),
    endpoint(operations.EVALS_REPORT),
    endpoint(operations.EVALS_COMPARE),
]
