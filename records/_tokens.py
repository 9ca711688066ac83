"""API tokens and their roles (GATEWAY.md, "Roles and tokens").

A token is 32 random bytes, shown once as `hol_…`; the store keeps only its
sha256 (a high-entropy secret needs no slow hash: there is nothing to guess).
Roles: `operator` (everything), `org:<org>` (its agents), `caller:<principal>`
(invoke under its mandates, read its ledger).
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

import re2
from sqlalchemy import select

from records._ids import ulid
from records._models import TokenRow
from records._types import utcnow
from schema.errors import NotFound, UsageError

if TYPE_CHECKING:
    from records._store import Store

__all__ = ["ROLE_PATTERN", "TokenInfo", "TokenRegistry", "check_role"]

ROLE_PATTERN = r"operator|org:[a-z0-9][a-z0-9-]{0,38}|caller:[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
_ROLE = re2.compile(ROLE_PATTERN)
PREFIX = "hol_"


def check_role(role: str) -> str:
    if not _ROLE.fullmatch(role):
        raise UsageError(
            f"not a role: {role!r}",
            hint="operator, org:ORG (e.g. org:acme) or caller:PRINCIPAL (e.g. caller:finance-bot)",
        )
    return role


def _hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TokenInfo:
    id: str
    role: str
    prefix: str
    note: str | None
    created_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def _info(row: TokenRow) -> TokenInfo:
    return TokenInfo(row.id, row.role, row.prefix, row.note, row.created_at, row.revoked_at)


class TokenRegistry:
    def __init__(self, store: Store) -> None:
        self._store = store

    def create(self, role: str, note: str | None = None) -> tuple[TokenInfo, str]:
        """A new token for `role`: its record and the token itself (never stored)."""
        check_role(role)
        if note is not None and len(note) > 200:
            raise UsageError("a note is at most 200 characters")
        token = PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
        row = TokenRow(
            id="tok_" + ulid(),
            role=role,
            token_hash=_hash(token),
            prefix=token[: len(PREFIX) + 4],
            note=note,
            created_at=utcnow(),
            revoked_at=None,
        )
        with self._store.write() as session:
            session.add(row)
            session.flush()
            return _info(row), token

    def authenticate(self, token: str) -> TokenInfo | None:
        """The active token's record, or None (unknown, malformed or revoked)."""
        if not token.startswith(PREFIX) or len(token) > 100:
            return None
        with self._store.read() as session:
            row = session.scalars(
                select(TokenRow).where(TokenRow.token_hash == _hash(token))
            ).first()
            if row is None or row.revoked_at is not None:
                return None
            return _info(row)

    def list(self, *, include_revoked: bool = False) -> builtins.list[TokenInfo]:
        with self._store.read() as session:
            query = select(TokenRow).order_by(TokenRow.id)
            if not include_revoked:
                query = query.where(TokenRow.revoked_at.is_(None))
            return [_info(r) for r in session.scalars(query)]

    def revoke(self, token_id: str) -> TokenInfo:
        with self._store.write() as session:
            row = session.get(TokenRow, token_id)
            if row is None:
                raise NotFound(f"no token {token_id!r}", details={"token": token_id})
            if row.revoked_at is None:
                row.revoked_at = utcnow()
            return _info(row)
