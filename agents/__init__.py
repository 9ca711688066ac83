"""Agents: manifests, protocol adapters and the one executor.

Never touches the database: everything it needs arrives as arguments.
"""

from agents._manifest import (
    AgentLimits,
    Manifest,
    Pricing,
    load_manifest,
    manifest_from_dict,
    parse_manifest,
)

__all__ = [
    "AgentLimits",
    "Manifest",
    "Pricing",
    "load_manifest",
    "manifest_from_dict",
    "parse_manifest",
]
