"""The gateway service: the HTTP API over the store, live calls under mandates."""

from gateway.server._app import ENDPOINTS, create_app

__all__ = ["ENDPOINTS", "create_app"]
