"""The client interface of the CLI, and its implementations."""

from gateway.client._interface import Client
from gateway.client._store import StoreClient
from gateway.client._views import agent_view, timestamp

__all__ = ["Client", "StoreClient", "agent_view", "timestamp"]
