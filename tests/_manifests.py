"""Manifests of test agents, as the tests register them."""

from __future__ import annotations

from typing import Any


def http_manifest(agent_id: str, endpoint: str, **extra: Any) -> dict[str, Any]:
    """A holon-http agent at `endpoint` claiming ticket.classify (the tiny suite's
    capability); `extra` adds or replaces fields."""
    return {
        "schema_version": 1,
        "id": agent_id,
        "version": "1.0.0",
        "protocol": "holon-http",
        "endpoint": endpoint,
        "capabilities": ["ticket.classify"],
        **extra,
    }
