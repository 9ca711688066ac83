"""Who answers at an agent's endpoint: the identity probe's document.

`holon-http` and `asgi` agents serve ``GET {endpoint}/.well-known/holon-agent``
as ``{"id", "version", "capabilities"}``; `a2a` agents are identified from
their agent card (see `agents._a2a.card_identity`). The probe is used before
an eval (the answering version must be the registered one) and periodically
for live traffic, so a probe is no sign of an eval.
"""

from __future__ import annotations

from dataclasses import dataclass

from agents._manifest import Manifest
from schema.jsontext import JSONValue

__all__ = ["IDENTITY_MAX_BYTES", "IDENTITY_PATH", "Identity", "IdentityError", "parse_identity"]

IDENTITY_PATH = "/.well-known/holon-agent"
IDENTITY_MAX_BYTES = 256 * 1024
"""Largest identity document or agent card read (they are small; agents are hostile)."""


class IdentityError(Exception):
    """The identity document is malformed; `str()` says how."""


@dataclass(frozen=True)
class Identity:
    """What the agent says it is. Callers compare `version` with the registered one."""

    id: str
    version: str
    capabilities: tuple[str, ...]

    def matches(self, agent: Manifest) -> bool:
        """True when the answering version is the registered one."""
        return self.version == agent.version


def parse_identity(document: JSONValue) -> Identity:
    """Validate ``{"id": str, "version": str, "capabilities": [str, ...]}``; extra keys ignored."""
    if not isinstance(document, dict):
        raise IdentityError("identity document is not a JSON object")
    ident, version = document.get("id"), document.get("version")
    if not isinstance(ident, str) or not ident:
        raise IdentityError("identity document lacks a string 'id'")
    if not isinstance(version, str) or not version:
        raise IdentityError("identity document lacks a string 'version'")
    capabilities = document.get("capabilities", [])
    if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
        raise IdentityError("identity 'capabilities' must be a list of strings")
    return Identity(id=ident, version=version, capabilities=tuple(capabilities))
