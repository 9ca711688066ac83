"""The service layer: the one interface the CLI and the server call, and its implementations
(on the store; over a gateway's HTTP API)."""

from gateway.service._http import GatewayUnreachable, HttpService
from gateway.service._interface import (
    EvalOptions,
    EvalsAPI,
    Progress,
    Proposal,
    Service,
)
from gateway.service._store import StoreService
from gateway.service._views import agent_view, login_name, timestamp

__all__ = [
    "Service",
    "EvalOptions",
    "EvalsAPI",
    "GatewayUnreachable",
    "HttpService",
    "Progress",
    "Proposal",
    "StoreService",
    "agent_view",
    "login_name",
    "timestamp",
]
