"""The store's service: the operator's work on the store (`StoreService`), and the views
the API and the CLI show of what it holds.

Below the operation table (gateway/operations), whose operations run on it; the
CLI's `Service` protocol and its other implementation, `HttpService` over a running
gateway, are the client's (gateway/client).

Its names load on first use (PEP 562): the operation table, which `holon --help`
builds, reads views and options from here inside its operations, and the service
itself loads the store (SQLAlchemy, every model) and the evals.
"""

from typing import TYPE_CHECKING

from schema import lazy_names

if TYPE_CHECKING:
    from gateway.service._doctor import Finding, diagnose
    from gateway.service._evals import eval_view, plan_view
    from gateway.service._interface import EvalOptions, EvalsAPI, Progress, Proposal
    from gateway.service._store import StoreService
    from gateway.service._views import (
        agent_view,
        author_suite_view,
        login_name,
        mandate_view,
        reset_view,
        revision_view,
        suite_view,
        timestamp,
        token_view,
    )

__all__ = [
    "EvalOptions",
    "EvalsAPI",
    "Finding",
    "Progress",
    "Proposal",
    "StoreService",
    "agent_view",
    "author_suite_view",
    "diagnose",
    "eval_view",
    "login_name",
    "mandate_view",
    "plan_view",
    "reset_view",
    "revision_view",
    "suite_view",
    "timestamp",
    "token_view",
]

# Where each public name lives; must list exactly __all__ (tests/gateway/test_service_face.py).
_HOMES: dict[str, str] = {
    "Finding": "gateway.service._doctor",
    "diagnose": "gateway.service._doctor",
    "eval_view": "gateway.service._evals",
    "plan_view": "gateway.service._evals",
    "EvalOptions": "gateway.service._interface",
    "EvalsAPI": "gateway.service._interface",
    "Progress": "gateway.service._interface",
    "Proposal": "gateway.service._interface",
    "StoreService": "gateway.service._store",
    "agent_view": "gateway.service._views",
    "author_suite_view": "gateway.service._views",
    "login_name": "gateway.service._views",
    "mandate_view": "gateway.service._views",
    "reset_view": "gateway.service._views",
    "revision_view": "gateway.service._views",
    "suite_view": "gateway.service._views",
    "timestamp": "gateway.service._views",
    "token_view": "gateway.service._views",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
