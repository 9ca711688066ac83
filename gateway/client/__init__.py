"""The client interface of the CLI, and its implementations (the store, a gateway over HTTP)."""

from gateway.client._http import GatewayUnreachable, HttpClient
from gateway.client._interface import (
    Client,
    EvalOptions,
    EvalsAPI,
    Progress,
    Proposal,
)
from gateway.client._store import StoreClient
from gateway.client._views import agent_view, login_name, timestamp

__all__ = [
    "Client",
    "EvalOptions",
    "EvalsAPI",
    "GatewayUnreachable",
    "HttpClient",
    "Progress",
    "Proposal",
    "StoreClient",
    "agent_view",
    "login_name",
    "timestamp",
]
