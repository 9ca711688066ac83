"""Web console sessions: a browser's sign-in, exchanged once for an API token.

The cookie is 32 random bytes (`hcs_…`); the store keeps only its sha256,
as it does for tokens (nothing to guess, so no slow hash). A session is
bound to the token it was exchanged for and is exactly as strong: it stops
working when the token is revoked or expires, when it is ended (sign-out),
or at its own expiry, whichever comes first. Kept in the store, so a
session survives a gateway restart and works on every gateway process.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update

from records._models import ConsoleSessionRow, TokenRow
from records._registry import Registry
from records._tokens import TokenInfo, _info
from records._types import utcnow

__all__ = ["SESSION_PREFIX", "ConsoleSession", "SessionRegistry"]

SESSION_PREFIX = "hcs_"
_MAX_COOKIE = 100  # a session cookie is 47 characters: anything longer is not one


def session_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ConsoleSession:
    token: TokenInfo  # the token it was exchanged for: its role is the session's
    created_at: datetime
    expires_at: datetime


class SessionRegistry(Registry):
    def create(self, token_id: str, lifetime: timedelta, now: datetime | None = None) -> str:
        """A new session for the token; the cookie value (never stored). It ends at
        `now + lifetime`, or at the token's own expiry if that comes first."""
        now = now or utcnow()
        secret = SESSION_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()
        secret = secret.rstrip("=")
        with self._store.write() as session:
            token = session.get(TokenRow, token_id)
            until = now + lifetime
            if token is not None and token.expires_at is not None:
                until = min(until, token.expires_at)
            # Sessions long past their end are of no use to anyone: the table stays small.
            session.execute(
                delete(ConsoleSessionRow).where(ConsoleSessionRow.expires_at < now - lifetime)
            )
            session.add(
                ConsoleSessionRow(
                    id=session_hash(secret),
                    token_id=token_id,
                    created_at=now,
                    expires_at=until,
                    ended_at=None,
                )
            )
        return secret

    def authenticate(self, secret: str, now: datetime | None = None) -> ConsoleSession | None:
        """The live session of that cookie, or None (unknown, ended, expired, or its token
        revoked or expired: one answer for all)."""
        if not secret.startswith(SESSION_PREFIX) or len(secret) > _MAX_COOKIE:
            return None
        now = now or utcnow()
        with self._store.read() as session:
            found = session.execute(
                select(ConsoleSessionRow, TokenRow)
                .join(TokenRow, TokenRow.id == ConsoleSessionRow.token_id)
                .where(ConsoleSessionRow.id == session_hash(secret))
            ).first()
        if found is None:
            return None
        row, token_row = found
        token = _info(token_row)
        if row.ended_at is not None or row.expires_at <= now:
            return None
        if token.revoked_at is not None or token.expired(now):
            return None
        return ConsoleSession(token, row.created_at, row.expires_at)

    def end(self, secret: str, now: datetime | None = None) -> bool:
        """Sign out: the session stops working on every process at once; whether it was live."""
        if not secret.startswith(SESSION_PREFIX) or len(secret) > _MAX_COOKIE:
            return False
        with self._store.write() as session:
            result = session.execute(
                update(ConsoleSessionRow)
                .where(
                    ConsoleSessionRow.id == session_hash(secret),
                    ConsoleSessionRow.ended_at.is_(None),
                )
                .values(ended_at=now or utcnow())
            )
            return bool(getattr(result, "rowcount", 0))
