"""Who is calling: a bearer token to its `Bearer` (the role it was made for, and its id),
and what each route lets them do.

docs/gateway.md, "Tokens and roles": `operator` (everything), `org:<org>` (its
agents: register, update, test, read records), `caller:<name>` (invoke
under its mandates, read its ledger). Every route declares the role kinds it
admits; ownership (an org's own agents, a caller's own ledger) is checked by
the handler, which knows the resource.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from math import inf
from typing import Any, Literal

from gateway._loops import Loop
from gateway._ttl import MISS, TtlCache
from records import LAST_USED_EVERY, Store
from schema.errors import Forbidden, Unauthorized

__all__ = ["TOKEN_USES", "Access", "Bearer", "TokenCache"]

RoleKind = Literal["operator", "org", "caller"]
# none: no token needed; any: any valid token; otherwise the role kinds admitted.
Access = Literal["none", "any"] | frozenset[RoleKind]


@dataclass(frozen=True)
class Bearer:
    """Whoever presented a valid token: its role (operator, org:NAME, caller:NAME) and id.

    Not a caller: an operator or an org is a bearer too (docs/glossary.md)."""

    role: str
    token_id: str | None

    @property
    def kind(self) -> RoleKind | None:
        head = self.role.split(":", 1)[0]
        return head if head in ("operator", "org", "caller") else None  # type: ignore[return-value]

    @property
    def name(self) -> str:
        """The org's or the caller's name ("" for the operator)."""
        return self.role.split(":", 1)[1] if ":" in self.role else ""

    @property
    def is_operator(self) -> bool:
        return self.role == "operator"

    def owns_agent(self, agent_id: str) -> bool:
        return self.is_operator or (self.kind == "org" and agent_id.split("/", 1)[0] == self.name)

    def require_agent(self, agent_id: str) -> None:
        if not self.owns_agent(agent_id):
            raise Forbidden(
                f"role {self.role} may not act on {agent_id}",
                details={"role": self.role, "agent": agent_id},
            )


ANONYMOUS = Bearer("", None)

# One answer for every token that does not authenticate: unknown, malformed,
# revoked or expired alike, so the answer tells a guesser nothing.
NOT_A_TOKEN = "unknown, revoked or expired token"

# Last-use writes, off the request path: one thread, so they never pile up.
_TOUCHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="holon-token-use")
# Its health, in every app of this process (gateway._loops).
TOKEN_USES = Loop("token-uses")


@dataclass(frozen=True)
class _Known:
    """A token that authenticated: what each request needs, ready (expiry in epoch seconds:
    one float compare with `time.time()` per request)."""

    bearer: Bearer
    token_id: str
    expires_s: float  # inf: never


def _utc(epoch_s: float) -> datetime:
    return datetime.fromtimestamp(epoch_s, UTC)


class TokenCache:
    """Token lookups, cached for a moment (a revoked token stops working within `ttl_s`).

    Entries are refreshed ahead of expiry (`gateway._ttl.TtlCache`), so a
    token in steady use is never looked up on the request path (this runs on
    the event loop); a miss is read through `run`, off the loop. Expiry is
    exact: every request compares the (cached) `expires_at` with the clock
    (`clock`: wall time in epoch seconds).

    A token's `last_used_at` is written at most once per `last_used_every_s`
    per process (a minute: records._tokens), queued to a background thread and
    never waited for, so it adds no write to any request; the store's
    conditional update keeps the stored time coarse across processes too.
    """

    def __init__(
        self,
        store: Store,
        ttl_s: float = 1.0,
        *,
        last_used_every_s: float = LAST_USED_EVERY.total_seconds(),
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.store = store
        # Keyed by the token itself: a failed reload names no token in the log.
        self._cache = TtlCache(ttl_s, item=lambda token: "token")
        self._last_used_every_s = last_used_every_s
        self._clock = clock
        self._monotonic = monotonic
        self._touched: dict[str, float] = {}  # token id -> when its use was last queued

    async def bearer(
        self, authorization: str | None, run: Callable[..., Awaitable[Any]]
    ) -> Bearer | None:
        """Who presented the token; a cache miss is read through `run` (off the event loop)."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise Unauthorized("the Authorization header must be 'Bearer <token>'")
        token = token.strip()

        def load() -> _Known | None:
            info = self.store.tokens.authenticate(token, _utc(self._clock()))
            if info is None:
                return None
            until = inf if info.expires_at is None else info.expires_at.timestamp()
            return _Known(Bearer(info.role, info.id), info.id, until)

        known: _Known | None = self._cache.peek(token, load)
        if known is MISS:
            started = time.monotonic()
            known = await run(load)
            self._cache.put(token, started, known)
        if known is None or known.expires_s <= self._clock():
            raise Unauthorized(NOT_A_TOKEN)
        at = self._monotonic()
        if at - self._touched.get(known.token_id, -inf) >= self._last_used_every_s:
            self._used(known.token_id, at)
        return known.bearer

    def _used(self, token_id: str, at: float) -> None:
        """Queue a last-use write (this process queued none for the token lately)."""
        if len(self._touched) >= 10_000:  # bounded: forgetting costs one early write
            self._touched.clear()
        self._touched[token_id] = at
        _TOUCHER.submit(self._touch, token_id, _utc(self._clock()))

    def _touch(self, token_id: str, now: datetime) -> None:
        try:
            self.store.tokens.touch(token_id, now)
        except Exception as exc:  # a lost last-use time is not worth a failed request
            TOKEN_USES.failed(f"the last use of token {token_id}", exc)
        else:
            TOKEN_USES.ok()

    def drain(self) -> None:
        """Wait for the last-use writes queued so far (before the store closes)."""
        _TOUCHER.submit(lambda: None).result()


def admit(access: Access, bearer: Bearer | None) -> Bearer:
    """The bearer, if `access` admits it; 401 without a token, 403 with the wrong role."""
    if access == "none":
        return bearer or ANONYMOUS
    if bearer is None:
        raise Unauthorized("this route needs a token", hint="send 'Authorization: Bearer <token>'")
    if access == "any" or bearer.kind in access:
        return bearer
    raise Forbidden(
        f"role {bearer.role} may not use this route",
        details={"role": bearer.role, "roles": sorted(access)},
    )
