"""API tokens and their roles (docs/gateway.md, "Tokens and roles").

A token is 32 random bytes, shown once as `hol_…`; the store keeps only its
sha256 (a high-entropy secret needs no slow hash: there is nothing to guess).
Roles: `operator` (everything), `org:<org>` (its agents), `caller:<name>`
(invoke under its mandates, read its ledger).

A token may expire (`expires_at`; none by default, as before: an operator
who wants expiry asks for it, and existing deployments keep working): from
that instant it authenticates as nothing, exactly as an unknown token.
`last_used_at` is coarse: `touch` writes it only when the stored time is at
least `LAST_USED_EVERY` old, and the gateway calls it at most once per token
per `LAST_USED_EVERY` per process, off the request path (gateway/web/_auth.py).
A minute is fine enough to tell a token in use from one that is not (what an
operator rotating or revoking tokens asks), and costs a token one write a
minute however many calls it makes.
"""

from __future__ import annotations

import base64
import builtins
import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import re2
from sqlalchemy import or_, select, update

from records._ids import ulid
from records._models import TokenRow
from records._registry import Registry
from records._rows import from_row
from records._types import utc_text, utc_text_or_none, utcnow
from schema.errors import NotFound, UsageError

__all__ = [
    "LAST_USED_EVERY",
    "ROLE_PATTERN",
    "TokenInfo",
    "TokenRegistry",
    "check_role",
    "parse_duration",
]

ROLE_PATTERN = r"operator|org:[a-z0-9][a-z0-9-]{0,38}|caller:[A-Za-z0-9][A-Za-z0-9._-]{0,63}"
_ROLE = re2.compile(ROLE_PATTERN)
PREFIX = "hol_"
LAST_USED_EVERY = timedelta(minutes=1)
_DURATION = re2.compile(r"([1-9][0-9]{0,5})([smhd])")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_DURATION = timedelta(days=3650)
_JSON_KINDS = {
    type(None): "null",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "an array",
    dict: "an object",
}


def parse_duration(text: object, where: str) -> timedelta:
    """A duration such as 90s, 15m, 12h or 30d (`where` names the flag or JSON path)."""
    found = _DURATION.fullmatch(text) if isinstance(text, str) else None
    if found is None:
        shown = repr(text) if isinstance(text, str) else _JSON_KINDS.get(type(text), "a value")
        raise UsageError(
            f"{where} must be a duration, got {shown[:40]}",
            details={"path": where},
            hint="a whole number and a unit s, m, h or d: 90s, 15m, 12h, 30d",
        )
    span = timedelta(seconds=int(found.group(1)) * _UNITS[found.group(2)])
    if span > MAX_DURATION:
        raise UsageError(
            f"{where}: {text} is longer than {MAX_DURATION.days} days",
            details={"path": where, "maximum": f"{MAX_DURATION.days}d"},
        )
    return span


def check_role(role: str) -> str:
    if not _ROLE.fullmatch(role):
        raise UsageError(
            f"not a role: {role!r}",
            hint="operator, org:ORG (e.g. org:acme) or caller:NAME (e.g. caller:finance-bot)",
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
    expires_at: datetime | None = None
    last_used_at: datetime | None = None

    @property
    def active(self) -> bool:
        """Not revoked (an expired token is still listed as not revoked; see `expired`)."""
        return self.revoked_at is None

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def to_json(self, now: datetime) -> dict[str, Any]:
        """Schema `entities/token`: never the token (its first characters tell tokens
        apart); `expired` as of `now`."""
        return {
            "id": self.id,
            "role": self.role,
            "prefix": self.prefix + "…",
            "note": self.note,
            "created_at": utc_text(self.created_at),
            "expires_at": utc_text_or_none(self.expires_at),
            "expired": self.expired(now),
            "last_used_at": utc_text_or_none(self.last_used_at),
            "revoked_at": utc_text_or_none(self.revoked_at),
        }


def _info(row: TokenRow) -> TokenInfo:
    return from_row(TokenInfo, row)


class TokenRegistry(Registry):
    def create(
        self, role: str, note: str | None = None, *, expires_at: datetime | None = None
    ) -> tuple[TokenInfo, str]:
        """A new token for `role`: its record and the token itself (never stored).

        `expires_at` may lie in the past (a token that never works; tests use one)."""
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
            expires_at=expires_at,
            last_used_at=None,
        )
        with self._store.write() as session:
            session.add(row)
            session.flush()
            return _info(row), token

    def authenticate(self, token: str, now: datetime | None = None) -> TokenInfo | None:
        """The active token's record, or None (unknown, malformed, revoked or expired).

        A cache of the answer must check `expired` again at each use."""
        if not token.startswith(PREFIX) or len(token) > 100:
            return None
        with self._store.read() as session:
            row = session.scalars(
                select(TokenRow).where(TokenRow.token_hash == _hash(token))
            ).first()
            if row is None or row.revoked_at is not None:
                return None
            info = _info(row)
            return None if info.expired(now or utcnow()) else info

    def touch(self, token_id: str, now: datetime | None = None) -> bool:
        """Record a use of the token at `now`, unless its last use is recorded less than
        `LAST_USED_EVERY` before; whether it wrote."""
        now = now or utcnow()
        with self._store.write() as session:
            result = session.execute(
                update(TokenRow)
                .where(
                    TokenRow.id == token_id,
                    or_(
                        TokenRow.last_used_at.is_(None),
                        TokenRow.last_used_at <= now - LAST_USED_EVERY,
                    ),
                )
                .values(last_used_at=now)
            )
            return bool(getattr(result, "rowcount", 0))

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
