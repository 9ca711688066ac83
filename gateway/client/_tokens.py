"""API tokens on the store (the CLI acting as operator, and the gateway's /v1/tokens)."""

from __future__ import annotations

from typing import Any

from gateway.client._views import token_view
from records import Store, parse_duration, utcnow

JSONObject = dict[str, Any]


class TokenOps:
    def __init__(self, store: Store) -> None:
        self.store = store

    def create(
        self,
        role: str,
        *,
        note: str | None = None,
        expires_in: str | None = None,
        where: str = "--expires-in",
    ) -> JSONObject:
        """A new token: `{"token": the token (shown once), **its view}`.

        `expires_in` is a duration (30d, 12h, 15m, 90s); `where` names it in errors."""
        now = utcnow()
        expires_at = None if expires_in is None else now + parse_duration(expires_in, where)
        info, token = self.store.tokens.create(role, note, expires_at=expires_at)
        return {"token": token, **token_view(info, now)}

    def list(self, *, include_revoked: bool = False) -> JSONObject:
        now = utcnow()
        items = self.store.tokens.list(include_revoked=include_revoked)
        return {"items": [token_view(t, now) for t in items]}

    def revoke(self, token_id: str) -> JSONObject:
        return token_view(self.store.tokens.revoke(token_id), utcnow())
