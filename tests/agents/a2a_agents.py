"""Real A2A agents built with the official `a2a-sdk` (1.x), for the a2a adapter's tests.

`sdk_agent(mode, version)` returns an ASGI app and its card: the SDK's
DefaultRequestHandler behind its own Starlette routes for the agent card and
JSON-RPC. With ``version="0.3"`` the card offers only a v0.3 interface and the
JSON-RPC route runs the SDK's v0.3 compatibility adapter (`message/send`).
The card's interface URL is only known once the server listens: tests set it
with `point_card_at` (`tests._servers.Tap` records what arrived on the wire).
"""

from __future__ import annotations

from a2a.helpers.proto_helpers import (
    get_data_parts,
    new_data_message,
    new_data_part,
    new_task_from_user_message,
    new_text_message,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from starlette.applications import Starlette

CARD_VERSION = "2.1.0"


class ScriptedExecutor(AgentExecutor):
    """Answers {capability, input} according to `mode`."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.message is not None
        data = get_data_parts(context.message.parts)
        request = data[0] if data else {}
        answer = {"echo": request.get("input"), "count": 5, "ratio": 0.5}
        if self.mode == "message":
            await event_queue.enqueue_event(new_data_message(answer))
            return
        if self.mode == "text-only":
            await event_queue.enqueue_event(new_text_message("I only speak prose"))
            return
        task = context.current_task or new_task_from_user_message(context.message)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if self.mode == "task":
            await updater.add_artifact([new_data_part(answer)], name="result")
            await updater.complete()
        elif self.mode == "failed":
            await updater.failed(updater.new_agent_message([new_data_part({"why": "no"})]))
        elif self.mode == "rejected":
            await updater.reject()
        else:
            raise AssertionError(f"unknown mode {self.mode}")

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


def sdk_agent(
    mode: str, *, version: str = "1.0", rpc_path: str = "/"
) -> tuple[Starlette, AgentCard]:
    card = AgentCard(
        name="acme-a2a-echo",
        description="echoes its input",
        version=CARD_VERSION,
        supported_interfaces=[
            AgentInterface(
                url="http://placeholder.invalid/",
                protocol_binding="JSONRPC",
                protocol_version=version,
            )
        ],
        capabilities=AgentCapabilities(),
        default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=ScriptedExecutor(mode), task_store=InMemoryTaskStore(), agent_card=card
    )
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(
        handler, rpc_path, enable_v0_3_compat=version.startswith("0.")
    )
    return Starlette(routes=routes), card


def point_card_at(card: AgentCard, url: str) -> None:
    """Set the card's interface URL (the SDK serves the same card object, so this is live)."""
    card.supported_interfaces[0].url = url
