"""A live call counted in /metrics: one way for every door that makes one.

The API's /invoke routes, the MCP, A2A and OpenAI doors and the console's "try a call"
all await their call through `observed`, so a call, a denial and a failed call are
counted once and alike (`Metrics.live_call`, `Metrics.denial`) whichever door carried it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from gateway.web._shared import Shared
from schema.errors import Denied, HolonError, InvalidInput

__all__ = ["observed"]

R = TypeVar("R")


async def observed(
    shared: Shared,
    capability: str,
    call: Awaitable[dict[str, Any]],
    encode: Callable[[dict[str, Any], int], Awaitable[R]],
) -> R:
    """A live call's answer as `encode` writes it (a door's own envelope: a response, a
    stream's events, a console page's answer), with its metrics: a denial (the ledger's)
    by its reason, a call the agent failed (502, 504) by its code, an answer as `ok`."""
    started = time.perf_counter()
    try:
        body = await call
        response = await encode(body, shared.calls.max_response_bytes)
    except (Denied, InvalidInput) as exc:  # both are ledger denials
        shared.metrics.denial(exc.code)
        raise
    except HolonError as exc:
        if exc.http_status in (502, 504):
            latency = (time.perf_counter() - started) * 1000
            shared.metrics.live_call(capability, exc.code, latency)
        raise
    shared.metrics.live_call(capability, "ok", float(body["latency_ms"]))
    return response
