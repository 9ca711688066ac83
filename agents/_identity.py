"""Who answers at an agent's endpoint: the identity probe's document.

`holon-http` and `asgi` agents serve ``GET {endpoint}/.well-known/holon-agent``
as ``{"id", "version", "capabilities"}``; `a2a` agents are identified from
their agent card (see `agents._a2a.card_identity`). The probe is used before
an eval (the answering version must be the registered one) and periodically
for live traffic, so a probe is no sign of an eval.

`Identity.compare` says what the answer means for the registered manifest
(docs/gateway.md, "Identity"): another id or version is a *mismatch* (the
record describes another agent), and a claimed capability the answer does
not list is *not advertised* (the agent itself denies it). A document
without `capabilities` (or a card without `skills`) says nothing either way:
no capability is refused for it, since the agent denies none.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from agents._manifest import CARD_PROTOCOLS, Manifest
from schema.jsontext import JSONValue

__all__ = [
    "IDENTITY_MAX_BYTES",
    "IDENTITY_PATH",
    "Identity",
    "IdentityCheck",
    "IdentityError",
    "parse_identity",
]

IDENTITY_PATH = "/.well-known/holon-agent"
IDENTITY_MAX_BYTES = 256 * 1024
"""Largest identity document or agent card read (they are small; agents are hostile)."""


class IdentityError(Exception):
    """The identity document is malformed; `str()` says how."""


# What an answer's id or version is shown as, at most (an agent's text is hostile).
_SHOWN_CHARS = 120


@dataclass(frozen=True)
class IdentityCheck:
    """An identity answer held against the registered manifest."""

    mismatch: str | None  # why the answer is another agent, or None
    not_advertised: tuple[str, ...]  # claimed capabilities the answer does not list
    answered_id: str  # as answered, cut to a bounded length
    answered_version: str
    card_digest: str | None = None  # the served A2A card's RFC 8785 sha256

    def observation(self) -> dict[str, Any]:
        """The keyword arguments of `records.IdentityRegistry.observe` for this check."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class Identity:
    """What the agent says it is. `capabilities` is None when the answer lists none."""

    id: str
    version: str
    capabilities: tuple[str, ...] | None
    # An A2A agent's card or an MCP server's info and tools (agents._mcp.card_of), as its
    # RFC 8785 sha256: what a certificate binds (None: neither, or no canonical form).
    card_digest: str | None = None

    def matches(self, agent: Manifest) -> bool:
        """True when the answering version is the registered one."""
        return self.version == agent.version

    def compare(self, agent: Manifest) -> IdentityCheck:
        """Mismatch and unadvertised claims of this answer against `agent`'s manifest.

        An A2A card and an MCP server's info name the agent their own way (a
        `name`), so only their version is compared; a holon identity document
        must name the id too.
        """
        shown_id, shown_version = self.id[:_SHOWN_CHARS], self.version[:_SHOWN_CHARS]
        mismatch = None
        if self.version != agent.version:
            mismatch = f"answered as version {shown_version!r}, but {agent.version} is registered"
        elif agent.protocol not in CARD_PROTOCOLS and self.id != agent.id:
            mismatch = f"answered as {shown_id!r}, but {agent.id} is registered"
        advertised = self.capabilities
        not_advertised = (
            ()
            if advertised is None
            else tuple(c for c in agent.capabilities if c not in set(advertised))
        )
        return IdentityCheck(mismatch, not_advertised, shown_id, shown_version, self.card_digest)


def parse_identity(document: JSONValue) -> Identity:
    """Validate ``{"id": str, "version": str, "capabilities": [str, ...]}``; extra keys ignored.

    `capabilities` may be left out (None: the agent advertises nothing either way).
    """
    if not isinstance(document, dict):
        raise IdentityError("identity document is not a JSON object")
    ident, version = document.get("id"), document.get("version")
    if not isinstance(ident, str) or not ident:
        raise IdentityError("identity document lacks a string 'id'")
    if not isinstance(version, str) or not version:
        raise IdentityError("identity document lacks a string 'version'")
    if "capabilities" not in document:
        return Identity(id=ident, version=version, capabilities=None)
    capabilities = document["capabilities"]
    if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
        raise IdentityError("identity 'capabilities' must be a list of strings")
    return Identity(id=ident, version=version, capabilities=tuple(capabilities))
