"""The store's service: the operator's work on the store (`StoreService`), and the views
the API and the CLI show of what it holds.

Below the operation table (gateway/operations), whose operations run on it; the
CLI's `Service` protocol and its other implementation, `HttpService` over a running
gateway, are the client's (gateway/client).
"""

from gateway.service._doctor import Finding, diagnose
from gateway.service._interface import EvalOptions, EvalsAPI, Progress, Proposal
from gateway.service._store import StoreService
from gateway.service._views import agent_view, login_name, timestamp

__all__ = [
    "EvalOptions",
    "EvalsAPI",
    "Finding",
    "Progress",
    "Proposal",
    "StoreService",
    "agent_view",
    "diagnose",
    "login_name",
    "timestamp",
]
