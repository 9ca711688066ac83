"""Who may reach a route, a page or an operation: the one declaration of access.

A token's role is `operator`, `org:ORG` or `caller:NAME` (records.ROLE_PATTERN);
its kind is the part before the colon. A route, a console page and an operation
each admit a set of kinds, or `any` valid token, or `none` needed; the sets
below are every one of them that holon uses (docs/gateway.md, "Tokens and roles").
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "ANY",
    "CALLER",
    "ROLE_KINDS",
    "LEDGER",
    "NONE",
    "OPERATOR",
    "ORG",
    "Access",
    "RoleKind",
    "kind_of",
]

# A role's part before ':' (records.ROLE_PATTERN spells the whole role). Declared here,
# not in records: the CLI's parser reads the access sets, and `holon --help` must not
# load the store's code.
RoleKind = Literal["operator", "org", "caller"]
ROLE_KINDS: tuple[RoleKind, ...] = ("operator", "org", "caller")

# none: no token needed; any: any valid token; otherwise the role kinds admitted.
Access = Literal["none", "any"] | frozenset[RoleKind]

NONE: Access = "none"
ANY: Access = "any"
OPERATOR: Access = frozenset({"operator"})
CALLER: Access = frozenset({"caller"})  # live calls: a caller only, under its mandates
ORG: Access = frozenset({"operator", "org"})  # an org, on its own agents; and the operator
LEDGER: Access = frozenset({"operator", "caller"})  # a caller, on its own rows; and the operator


def kind_of(role: str) -> RoleKind | None:
    """The kind of a role (`org` of `org:acme`); None for a text that is no role's."""
    head = role.split(":", 1)[0]
    return next((kind for kind in ROLE_KINDS if kind == head), None)
