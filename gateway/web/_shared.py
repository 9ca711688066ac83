"""What handlers share: the store, its service layer (the same views as the CLI's), live calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from anyio import to_thread
from starlette.responses import Response

from gateway._loops import Loops
from gateway._network import NetworkPolicy
from gateway.live import LiveCalls
from gateway.service import StoreService
from gateway.web._auth import TokenCache
from gateway.web._metrics import Metrics
from records import Store
from schema.errors import HolonError

T = TypeVar("T")

__all__ = ["Endpoint", "Shared"]


@dataclass
class Shared:
    store: Store
    service: StoreService
    calls: LiveCalls
    tokens: TokenCache
    metrics: Metrics
    network: NetworkPolicy
    max_body_bytes: int = 8 * 1024 * 1024
    eval_on_register: bool = False  # HOLON_EVAL_ON_REGISTER
    body_timeout_s: float = 10.0  # HOLON_BODY_TIMEOUT_S
    public_url: str | None = None  # HOLON_PUBLIC_URL: the A2A cards' interface URL
    # Calls still running for A2A tasks answered at once (returnImmediately).
    background: set[Any] = field(default_factory=set)
    doors: dict[str, Any] = field(default_factory=dict)  # a front door's state (its writers)
    # The background loops this app runs or relies on (/readyz, /metrics).
    loops: Loops = field(default_factory=Loops)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking store work in a worker thread, never on the event loop."""
        return await to_thread.run_sync(fn, *args)


@dataclass(frozen=True)
class Endpoint:
    """One route: what it does, who may call it, and what it takes and gives (for /openapi.json)."""

    method: str
    path: str
    access: Any  # gateway.web._auth.Access
    handler: Callable[..., Any]
    summary: str
    request: dict[str, Any] | None = None  # JSON Schema of the body
    response: dict[str, Any] | None = None  # JSON Schema of a 2xx body
    query: tuple[tuple[str, str], ...] = ()  # (name, description)
    # Query parameters as OpenAPI writes them (an operation's, gateway/web/_operations.py).
    parameters: tuple[dict[str, Any], ...] = ()
    renamed: tuple[tuple[str, str], ...] = ()  # deprecated query names: (old, new)
    headers: tuple[tuple[str, str], ...] = ()  # optional request headers: (name, description)
    statuses: tuple[int, ...] = ()  # error statuses beyond 400/401/403
    media: str = "application/json"
    # A rendered document's media types, each with its body's JSON Schema (None: text),
    # where the request chooses one (a report's format): these instead of `media`.
    documents: tuple[tuple[str, dict[str, Any] | None], ...] = ()
    # A 200 that may be server-sent events instead, when the request asks for a stream
    # (gateway.server._streams): what the events are.
    events: str | None = None
    # A front door whose protocol has its own error shape (the OpenAI door's): how every
    # error of this route is answered, the token's refusal included, and its JSON Schema.
    # None: holon's one shape (gateway.web._http.error_response).
    errors: Callable[[HolonError], Response] | None = None
    error_schema: dict[str, Any] | None = None
