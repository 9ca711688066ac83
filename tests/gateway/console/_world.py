"""A real gateway with the console, a tiny suite, the triage agent and a hostile one."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from records import Store
from tests._servers import serve
from tests.gateway.server._agent import manifest
from tests.gateway.server._gateway import (
    Gateway,
    install_tiny,
    mandate,
    register_triage,
    running_gateway,
)

HOLDOUT_TEXT = "Refund please"  # every holdout input of the tiny suite; no public one
# Agent text that would run, reorder or flood a page if it were not escaped and bounded.
HOSTILE = (
    "<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\">"
    "invoice\u202etxt.exe\u200b\x00 <style>body{display:none}</style>"
)
HUGE = "A" * 200_000
TRIAGE = "acme/ticket-triage"
EVIL = "acme/hostile"


def hostile_agent(agent_id: str) -> Starlette:
    """A holon-http agent that answers every case with hostile text (and a huge one)."""

    async def call(request: Request) -> Response:
        label = HOSTILE + HUGE[:20_000]
        return JSONResponse({"output": {"label": label, "note": HOSTILE}})

    async def identity(request: Request) -> Response:
        return JSONResponse({"id": agent_id, "version": "1.0.0"})

    return Starlette(
        routes=[
            Route("/agent", call, methods=["POST"]),
            Route("/agent/.well-known/holon-agent", identity, methods=["GET"]),
        ]
    )


@dataclass
class World:
    gw: Gateway
    triage_eval: str
    hostile_eval: str
    clients: list[httpx.Client] = field(default_factory=list)

    def sign_in(self, role: str) -> httpx.Client:
        """A client holding a console session of `role`, closed with the world."""
        self.gw.token(role)
        client = signed_in(self.gw, role)
        self.clients.append(client)
        return client


@contextmanager
def world(store: Store, root: Path) -> Iterator[World]:
    install_tiny(store, root, holdout_wrong=1)
    register_triage(store)
    store.mandates.grant(mandate(budget={"amount_usd": "1", "period": "day"}))
    with serve(hostile_agent(EVIL)) as agent_url:
        store.agents.register(manifest(EVIL, agent_url, description=HOSTILE + HUGE[:1500]))
        with running_gateway(store, root / "home") as gw:
            triage = gw.evaluate(TRIAGE)["id"]
            hostile = _evaluate_any(gw, EVIL)
            for _ in range(3):
                gw.call(
                    "POST",
                    f"/v1/agents/{TRIAGE}/invoke",
                    "caller:finance-bot",
                    json={"capability": "ticket.classify", "input": {"subject": "Hi", "body": "x"}},
                )
            built = World(gw, triage, hostile)
            try:
                yield built
            finally:
                for client in built.clients:
                    client.close()


def _evaluate_any(gw: Gateway, agent_id: str) -> str:
    """An eval of the agent, followed to its end whatever it scores."""
    import time

    started = gw.call("POST", "/v1/evals", "operator", json={"agent": agent_id})
    assert started.status_code == 201, started.text
    eval_id: str = started.json()["eval"]["id"]
    deadline = time.monotonic() + 60
    while gw.call("GET", f"/v1/evals/{eval_id}", "operator").json()["status"] == "running":
        assert time.monotonic() < deadline, f"eval {eval_id} did not finish"
        time.sleep(0.05)
    return eval_id


def signed_in(gw: Gateway, role: str) -> httpx.Client:
    """A client holding a console session of `role` (signed in through the form)."""
    client = httpx.Client(base_url=gw.url, timeout=30)
    response = client.post(
        "/ui/sign-in", data={"token": gw.tokens[role]}, headers={"origin": gw.url}
    )
    if response.status_code != 303:
        client.close()
        raise AssertionError(response.text)
    return client


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
    assert found is not None, "the page has no CSRF field"
    return found.group(1)
