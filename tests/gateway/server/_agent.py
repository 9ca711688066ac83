"""A real holon-http ticket agent over loopback that records what it receives."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from records import Store
from tests._servers import serve


@dataclass
class Recording:
    calls: list[tuple[list[tuple[bytes, bytes]], bytes]] = field(default_factory=list)
    behaviour: str = "ok"  # ok | error | slow
    answers_version: str | None = None  # what the identity document says (None: the real one)
    # The capabilities the identity document advertises (None: it leaves the key out).
    advertises: list[str] | None = field(default_factory=lambda: ["ticket.classify"])
    # Versions the identity document cycles through, one per probe (None in it: the real
    # one); when set, it overrides `answers_version`.
    answers_cycle: list[str | None] | None = None
    probes: int = 0


def recording_agent(agent_id: str, version: str, recording: Recording) -> Starlette:
    async def call(request: Request) -> Response:
        body = await request.body()
        recording.calls.append((list(request.scope["headers"]), body))
        if recording.behaviour == "error":
            return JSONResponse({"detail": "boom"}, status_code=500)
        if recording.behaviour == "slow":
            await asyncio.sleep(3)
        return JSONResponse({"output": {"label": "billing"}, "usage": {"input_tokens": 10}})

    async def identity(request: Request) -> Response:
        recording.probes += 1
        answer = recording.answers_version or version
        if recording.answers_cycle:
            cycle = recording.answers_cycle
            answer = cycle[(recording.probes - 1) % len(cycle)] or version
        document: dict[str, Any] = {"id": agent_id, "version": answer}
        if recording.advertises is not None:
            document["capabilities"] = recording.advertises
        return JSONResponse(document)

    return Starlette(
        routes=[
            Route("/agent", call, methods=["POST"]),
            Route("/agent/.well-known/holon-agent", identity, methods=["GET"]),
        ]
    )


def manifest(agent_id: str, url: str, **changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "schema_version": 1,
        "id": agent_id,
        "version": "1.0.0",
        "protocol": "holon-http",
        "endpoint": url + "/agent",
        "capabilities": ["ticket.classify"],
        "limits": {"max_cost_usd": "0.01", "timeout_s": 5},
        "pricing": {"per_call_usd": "0.001"},
    }
    data.update(changes)
    return data


@contextmanager
def serving_recorder(store: Store, agent_id: str, recording: Recording) -> Iterator[str]:
    """The recording agent served on 127.0.0.1 as `agent_id` 1.0.0 and registered;
    yields its URL."""
    with serve(recording_agent(agent_id, "1.0.0", recording)) as url:
        store.agents.register(manifest(agent_id, url))
        yield url
