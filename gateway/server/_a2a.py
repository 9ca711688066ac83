"""The A2A front door: A2A 1.0 JSON-RPC in front of each capability and each agent.

`POST /v1/capabilities/{capability}/a2a` is the routed live call of
`/v1/capabilities/{capability}/invoke`, `POST /v1/agents/{org}/{name}/a2a`
the direct one of `/v1/agents/{org}/{name}/invoke`: `SendMessage` goes
through the same `LiveCalls` (mandates, ledger row, budget, rate limit,
contract) and the same metrics (`_routes_calls.observed`) as `/invoke`.
Their cards: gateway.server._a2a_cards.

The message: one part. A DataPart carries the capability's input (at an
agent's door, `{"capability", "input"}`, as /invoke's body and holon's own
`a2a` adapter send it). A TextPart is the input only where the
capability's input schema is a string; elsewhere it is refused
(ContentTypeNotSupported, -32005), never guessed into an object.

The answer is a Task: `TASK_STATE_COMPLETED` with one artifact holding one
DataPart (the output), `TASK_STATE_REJECTED` when the caller's side refused
it (a mandate, a budget, a rate limit, an input outside the schema: holon
errors under 500), `TASK_STATE_FAILED` when the agent failed; the status
message says why in text and holon's error body as a DataPart, and
`metadata.holon` has /invoke's envelope (agent, cost, mandate, request id)
or the error. With `configuration.returnImmediately` the task is answered
`TASK_STATE_WORKING` at once and the call goes on in this process; any
process answers `GetTask` from the store (records.A2ATaskRegistry), where a
task is its caller's alone. `SendStreamingMessage` makes the same call and
task, streamed as the task's events (gateway.server._a2a_events).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from datetime import timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from agents import printable
from gateway._params import id_text
from gateway._roles import CALLER
from gateway.live import Started
from gateway.server._a2a_cards import JSON_MODE, agent_card, capability_card
from gateway.server._a2a_events import ended_events, task_event
from gateway.server._jsonrpc import (
    INVALID_PARAMS,
    RpcError,
    RpcRequest,
    answer,
    rpc_result,
    unknown_method,
)
from gateway.server._routes_calls import answer_too_large
from gateway.server._streams import STREAM_HEADERS, start_stream
from gateway.web import Bearer, Endpoint, Shared, json_response, observed
from records import utc_text, utcnow
from schema.errors import HolonError, RateLimited, UsageError
from schema.jsontext import dumps

log = logging.getLogger(__name__)

__all__ = ["A2A_LOOP", "ENDPOINTS", "STALE_AFTER"]

A2A_LOOP = "a2a-tasks"  # the calls and writes of tasks, after their answers (gateway._loops)

TASK_NOT_FOUND = -32001
TASK_NOT_CANCELABLE = -32002
UNSUPPORTED_OPERATION = -32004
CONTENT_TYPE_NOT_SUPPORTED = -32005
METHODS = ("SendMessage", "SendStreamingMessage", "GetTask", "CancelTask")
# A2A methods this door knows and does not offer (no resubscribing, no push, no listing).
UNSUPPORTED = (
    "SubscribeToTask",
    "ListTasks",
    "CreateTaskPushNotificationConfig",
    "GetTaskPushNotificationConfig",
    "ListTaskPushNotificationConfigs",
    "DeleteTaskPushNotificationConfig",
    "GetExtendedAgentCard",
)
# A task still working this long after its last write lost the process running it.
STALE_AFTER = timedelta(hours=1)
MAX_TASK_ID_CHARS = 64
# Detached calls (`returnImmediately`) a caller may have running in one gateway process.
# A blocking call holds its HTTP request, so the server's connection limits bound those; a
# detached one holds nothing of the caller's, and without this bound one caller could start
# calls faster than agents answer them, as many as its budget allows.
MAX_DETACHED_PER_CALLER = 64
WORKING, COMPLETED, REJECTED, FAILED = (
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_REJECTED",
    "TASK_STATE_FAILED",
)


def _base(request: Request, shared: Shared) -> str:
    if shared.public_url is not None:
        return shared.public_url
    return str(request.base_url).rstrip("/")


async def capability_card_route(request: Request, who: Any, shared: Shared) -> Response:
    card = await shared.run(
        capability_card, shared, _base(request, shared), request.path_params["capability"]
    )
    return json_response(card)


async def agent_card_route(request: Request, who: Any, shared: Shared) -> Response:
    agent_id = f"{request.path_params['org']}/{request.path_params['name']}"
    return json_response(await shared.run(agent_card, shared, _base(request, shared), agent_id))


# -- the JSON-RPC door -----------------------------------------------------------------


class _Door:
    """Which door a request came through: a routed capability, or one agent."""

    def __init__(self, capability: str | None, agent_id: str | None) -> None:
        self.capability = capability
        self.agent_id = agent_id

    @property
    def name(self) -> str:
        if self.agent_id is not None:
            return f"agent:{self.agent_id}"
        return f"capability:{self.capability}"


async def capability_door(request: Request, who: Bearer, shared: Shared) -> Response:
    return await _door(request, who, shared, _Door(request.path_params["capability"], None))


async def agent_door(request: Request, who: Bearer, shared: Shared) -> Response:
    agent_id = f"{request.path_params['org']}/{request.path_params['name']}"
    return await _door(request, who, shared, _Door(None, agent_id))


async def _door(request: Request, who: Bearer, shared: Shared, door: _Door) -> Response:
    async def dispatch(rpc: RpcRequest) -> Response:
        if rpc.method == "SendMessage":
            return await _send(rpc, who, shared, door)
        if rpc.method == "SendStreamingMessage":
            return await _stream(rpc, who, shared, door)
        if rpc.method == "GetTask":
            return rpc_result(rpc.id, await _stored(rpc, who, shared))
        if rpc.method == "CancelTask":
            task = await _stored(rpc, who, shared)
            raise RpcError(
                TASK_NOT_CANCELABLE,
                "a holon task cannot be canceled: its live call is already with the agent "
                f"(the task is {task['status']['state']})",
                holon_code="task_not_cancelable",
            )
        if rpc.method in UNSUPPORTED:
            raise RpcError(
                UNSUPPORTED_OPERATION,
                f"{rpc.method} is not offered by holon's A2A door; it answers "
                + ", ".join(METHODS),
                holon_code="unsupported_operation",
                details={"methods": list(METHODS)},
            )
        raise unknown_method(rpc, METHODS)

    return await answer(request, shared.max_body_bytes, dispatch)


async def _stored(rpc: RpcRequest, who: Bearer, shared: Shared) -> dict[str, Any]:
    task_id = rpc.params.get("id")
    if not isinstance(task_id, str) or not task_id or len(task_id) > MAX_TASK_ID_CHARS:
        raise RpcError(
            INVALID_PARAMS, "params.id must be a task id", details={"path": "$.params.id"}
        )
    # Ours are uuid4s: anything else is no task of ours, and never reaches the store
    # (PostgreSQL refuses a NUL in text).
    found = (
        await shared.run(shared.store.a2a_tasks.get, task_id, who.name)
        if _is_task_id(task_id)
        else None
    )
    if found is None:  # or another caller's: the same answer
        raise RpcError(
            TASK_NOT_FOUND,
            "no such task",
            holon_code="not_found",
            details={"task": task_id if task_id.isascii() and task_id.isprintable() else None},
        )
    if found.state == WORKING and utcnow() - found.updated_at > STALE_AFTER:
        return _failed_task(
            found.task,
            HolonError("the gateway process running this task stopped before it finished"),
        )
    return found.task


def _is_task_id(text: str) -> bool:
    """A uuid4 as this door writes them (lowercase, hyphenated)."""
    if len(text) != 36:
        return False
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def _configuration(params: dict[str, Any]) -> dict[str, Any]:
    configuration = params.get("configuration", {})
    if not isinstance(configuration, dict):
        raise RpcError(
            INVALID_PARAMS,
            "params.configuration must be a SendMessageConfiguration object",
            details={"path": "$.params.configuration"},
        )
    return configuration


async def _parse_message(params: dict[str, Any], shared: Shared, door: _Door) -> tuple[str, Any]:
    """(capability, input) of a SendMessage, or the RpcError that says what is wrong."""
    message = params.get("message")
    if not isinstance(message, dict):
        raise RpcError(
            INVALID_PARAMS, "params.message must be a Message", details={"path": "$.params.message"}
        )
    if message.get("taskId"):
        raise RpcError(
            UNSUPPORTED_OPERATION,
            "a holon task takes one message: send a new message without taskId",
            holon_code="unsupported_operation",
            details={"path": "$.params.message.taskId"},
        )
    parts = message.get("parts")
    if not isinstance(parts, list) or len(parts) != 1 or not isinstance(parts[0], dict):
        raise RpcError(
            INVALID_PARAMS,
            "the message must have exactly one part: a DataPart with the input",
            details={"path": "$.params.message.parts"},
        )
    accepted = _configuration(params).get("acceptedOutputModes")
    if isinstance(accepted, list) and accepted and not {JSON_MODE, "*/*"} & set(accepted):
        raise RpcError(
            CONTENT_TYPE_NOT_SUPPORTED,
            f"the output is {JSON_MODE}, which acceptedOutputModes leaves out",
            holon_code="content_type_not_supported",
            details={"path": "$.params.configuration.acceptedOutputModes"},
        )
    part = parts[0]
    if door.agent_id is not None:
        data = part.get("data")
        if not isinstance(data, dict) or set(data) != {"capability", "input"}:
            raise RpcError(
                CONTENT_TYPE_NOT_SUPPORTED if "data" not in part else INVALID_PARAMS,
                'at an agent\'s door the part is a DataPart {"capability": "...", "input": ...}',
                holon_code="usage",
                details={"path": "$.params.message.parts[0]"},
            )
        try:
            capability = id_text(
                data["capability"], "$.params.message.parts[0].data.capability", "a capability"
            )
        except UsageError as exc:
            raise RpcError.of(exc, INVALID_PARAMS) from None
        return capability, data["input"]
    assert door.capability is not None
    if "data" in part:
        return door.capability, part["data"]
    if "text" in part and isinstance(part["text"], str):
        contract = await shared.calls.contract(door.capability)
        if contract is not None and contract.input_schema.get("type") == "string":
            return door.capability, part["text"]
    raise RpcError(
        CONTENT_TYPE_NOT_SUPPORTED,
        f"{door.capability} takes its input as a DataPart ({JSON_MODE}); a text, raw or url "
        "part is the input only where the capability's input is a string (text)",
        holon_code="content_type_not_supported",
        details={"path": "$.params.message.parts[0]", "expected": JSON_MODE},
    )


async def _prepare(
    rpc: RpcRequest, who: Bearer, shared: Shared, door: _Door
) -> tuple[dict[str, Any], str, Callable[[Started | None], Awaitable[dict[str, Any]]]]:
    """(the task's ids, the capability, the live call) of a message, or its RpcError."""
    capability, input_ = await _parse_message(rpc.params, shared, door)
    message = rpc.params["message"]
    context_id = message.get("contextId")
    if context_id is None:
        context_id = str(uuid.uuid4())
    elif not (
        isinstance(context_id, str)
        and 0 < len(context_id) <= MAX_TASK_ID_CHARS
        and context_id.isascii()
        and context_id.isprintable()
    ):
        raise RpcError(
            INVALID_PARAMS,
            f"contextId must be at most {MAX_TASK_ID_CHARS} printable ASCII characters",
            details={"path": "$.params.message.contextId"},
        )
    task = {"id": str(uuid.uuid4()), "contextId": context_id}

    def call(started: Started | None) -> Awaitable[dict[str, Any]]:
        if door.agent_id is not None:
            return shared.calls.invoke(who.name, door.agent_id, capability, input_, started=started)
        return shared.calls.route(who.name, capability, input_, started=started)

    return task, capability, call


async def _keep(shared: Shared, who: Bearer, door: _Door, state: dict[str, Any]) -> None:
    """Store the task as it is now (GetTask's answer, from any process)."""
    status = state["status"]["state"]
    await _writer(shared).write((state["id"], who.name, door.name, status, state))


async def _send(rpc: RpcRequest, who: Bearer, shared: Shared, door: _Door) -> Response:
    task, capability, call = await _prepare(rpc, who, shared, door)
    immediate = _configuration(rpc.params).get("returnImmediately") is True

    async def finish() -> dict[str, Any]:
        """The live call, and its task as it ended."""
        finished: dict[str, Any] = {}

        async def encode(body: dict[str, Any], limit: int) -> Response:
            finished.update(_completed_task(task, capability, body))
            content = dumps({"task": finished}).encode()
            if len(content) > limit:
                raise answer_too_large(body, len(content), limit)
            return Response(content)

        try:
            await observed(shared, capability, call(None), encode)
        except HolonError as exc:
            finished = _failed_task(task, exc)
        return finished

    async def keep(state: dict[str, Any]) -> None:
        await _keep(shared, who, door, state)

    if not immediate:
        finished = await finish()
        # Answered first and written right after, as a settlement is: a client holding
        # the completed task has no reason to poll it, and the answer waits for no write.
        _later(shared, keep(finished), task["id"])
        return rpc_result(rpc.id, {"task": finished})
    running: dict[str, int] = shared.doors.setdefault("a2a_detached", {})
    if running.get(who.name, 0) >= MAX_DETACHED_PER_CALLER:
        refused = RateLimited(
            f"{who.name} has {MAX_DETACHED_PER_CALLER} tasks running on this gateway process:"
            " wait for one to finish, or send without returnImmediately",
            details={"running": MAX_DETACHED_PER_CALLER, "limit": MAX_DETACHED_PER_CALLER},
        )
        return rpc_result(rpc.id, {"task": _failed_task(task, refused)})
    running[who.name] = running.get(who.name, 0) + 1
    working = {**task, "status": {"state": WORKING, "timestamp": utc_text(utcnow())}}

    def release() -> None:
        running[who.name] -= 1
        if not running[who.name]:
            del running[who.name]

    async def run() -> None:
        try:
            await keep(await finish())
        finally:
            release()

    try:
        await keep(working)
    except BaseException:
        release()
        raise
    _later(shared, run(), task["id"])
    return rpc_result(rpc.id, {"task": working})


async def _stream(rpc: RpcRequest, who: Bearer, shared: Shared, door: _Door) -> Response:
    """SendStreamingMessage: the task's events (gateway.server._a2a_events) as the call goes,
    held to the contract as every stream is (gateway.server._streams). The task is stored
    working once its agent is called, before the stream's first event, then as it ended,
    whether or not the caller is still there."""
    task, capability, call = await _prepare(rpc, who, shared, door)

    def encoder(agent: str, request_id: str) -> Callable[[dict[str, Any], int], Awaitable[Ended]]:
        async def encode(body: dict[str, Any], limit: int) -> Ended:
            finished = _completed_task(task, capability, body)
            events = ended_events(rpc.id, finished)
            if len(events) > limit:
                raise answer_too_large(body, len(events), limit)
            return finished, events

        return encode

    try:
        stream = await start_stream(shared, capability, call, encoder)
    except HolonError as exc:  # refused before its agent was called: the task says so
        refused = _failed_task(task, exc)
        _later(shared, _keep(shared, who, door, refused), task["id"])
        return _event_stream(_once(task_event(rpc.id, refused)))
    working = {**task, "status": {"state": WORKING, "timestamp": utc_text(utcnow())}}
    # Stored before the stream says it (as an at-once task is): GetTask finds what it names.
    await _keep(shared, who, door, working)

    async def kept() -> None:
        try:
            finished, _events = await stream.task
        except HolonError as exc:
            finished = _failed_task(task, exc)
        await _keep(shared, who, door, finished)

    _later(shared, kept(), task["id"])

    async def events() -> AsyncIterator[bytes]:
        yield task_event(rpc.id, working)
        async for beat in stream.waiting():
            yield beat
        try:
            yield stream.task.result()[1]
        except HolonError as exc:
            yield ended_events(rpc.id, _failed_task(task, exc))

    return _event_stream(events())


Ended = tuple[dict[str, Any], bytes]  # a task as it ended, and its events


async def _once(event: bytes) -> AsyncIterator[bytes]:
    yield event


def _event_stream(events: AsyncIterator[bytes]) -> Response:
    return StreamingResponse(events, media_type="text/event-stream", headers=STREAM_HEADERS)


TaskWrite = tuple[str, str, str, str, dict[str, Any]]


class _TaskWriter:
    """The task writes of one loop turn in one transaction: on SQLite every write takes
    the one write lock the ledger's group commit needs too, so one per call would queue
    the calls behind each other (bench/doors)."""

    def __init__(self, shared: Shared) -> None:
        self.shared = shared
        self.pending: list[tuple[TaskWrite, asyncio.Future[None]]] = []
        self.flushing: asyncio.Task[None] | None = None

    async def write(self, write: TaskWrite) -> None:
        done = asyncio.get_running_loop().create_future()
        self.pending.append((write, done))
        if self.flushing is None or self.flushing.done():
            self.flushing = asyncio.get_running_loop().create_task(self._flush())
        await done

    async def _flush(self) -> None:
        while self.pending:
            batch, self.pending = self.pending, []
            try:
                await self.shared.run(self.shared.store.a2a_tasks.put_many, [w for w, _ in batch])
            except Exception as exc:
                for _, done in batch:
                    if not done.done():  # its writer may have been cancelled meanwhile
                        done.set_exception(exc)
            else:
                for _, done in batch:
                    if not done.done():
                        done.set_result(None)


def _writer(shared: Shared) -> _TaskWriter:
    writer = shared.doors.get("a2a_tasks")
    if writer is None:
        writer = shared.doors["a2a_tasks"] = _TaskWriter(shared)
    assert isinstance(writer, _TaskWriter)
    return writer


def _later(shared: Shared, work: Coroutine[Any, Any, None], task_id: str) -> None:
    """`work` on the loop after the answer, held until it ends (the loop holds weak refs)."""
    loop = shared.loops.named(A2A_LOOP)

    async def logged() -> None:
        try:
            await work
        except Exception as exc:  # the task stays as last written; GetTask says so
            loop.failed(f"A2A task {task_id}", exc)
        else:
            loop.ok()

    background = asyncio.get_running_loop().create_task(logged())
    shared.background.add(background)
    background.add_done_callback(shared.background.discard)


def _completed_task(task: dict[str, Any], capability: str, body: dict[str, Any]) -> dict[str, Any]:
    envelope = {key: value for key, value in body.items() if key != "output"}
    return {
        **task,
        "status": {"state": COMPLETED, "timestamp": utc_text(utcnow())},
        "artifacts": [
            {
                "artifactId": str(body["request_id"]),
                "name": capability,
                "parts": [{"data": body["output"], "mediaType": JSON_MODE}],
            }
        ],
        "metadata": {"holon": envelope},
    }


def _failed_task(task: dict[str, Any], error: HolonError) -> dict[str, Any]:
    body = error.to_body()["error"]
    state = REJECTED if error.http_status < 500 else FAILED
    return {
        "id": task["id"],
        "contextId": task["contextId"],
        "status": {
            "state": state,
            "timestamp": utc_text(utcnow()),
            "message": {
                "messageId": str(uuid.uuid4()),
                "role": "ROLE_AGENT",
                "parts": [
                    {"text": printable(f"{body['code']}: {body['message']}", 4000)},
                    {"data": {"error": body}, "mediaType": JSON_MODE},
                ],
            },
        },
        "metadata": {"holon": {"error": body}},
    }


_RPC_REQUEST = {
    "type": "object",
    "description": "one A2A 1.0 JSON-RPC request (SendMessage, SendStreamingMessage, GetTask, "
    "CancelTask)",
    "required": ["jsonrpc", "method"],
}
_RPC_RESPONSE = {"type": "object", "description": "one JSON-RPC 2.0 response"}
_RPC_EVENTS = "SendStreamingMessage: one JSON-RPC 2.0 response an event (docs/gateway.md)"
_CARD = {"type": "object", "description": "an A2A AgentCard, signed (docs/gateway.md)"}


def _rpc_door(path: str, handler: Any, summary: str) -> Endpoint:
    """A door that speaks A2A's JSON-RPC: the routed one and one agent's take the same."""
    return Endpoint(
        "POST",
        path,
        CALLER,
        handler,
        summary,
        request=_RPC_REQUEST,
        response=_RPC_RESPONSE,
        events=_RPC_EVENTS,
        statuses=(202, 413),
    )


ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/capabilities/{capability}/.well-known/agent-card.json",
        "any",
        capability_card_route,
        "the signed A2A agent card of the routed door for a capability",
        response=_CARD,
    ),
    Endpoint(
        "GET",
        "/v1/agents/{org}/{name}/.well-known/agent-card.json",
        "any",
        agent_card_route,
        "the signed A2A agent card of the door in front of one agent, with its certificate",
        response=_CARD,
        statuses=(404,),
    ),
    _rpc_door(
        "/v1/capabilities/{capability}/a2a",
        capability_door,
        "the A2A front door (JSON-RPC, A2A 1.0): a routed live call under the caller's mandates",
    ),
    _rpc_door(
        "/v1/agents/{org}/{name}/a2a",
        agent_door,
        "the A2A front door (JSON-RPC, A2A 1.0) of one agent, under the caller's mandates",
    ),
]
