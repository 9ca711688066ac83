"""SendStreamingMessage at the A2A door with the a2a-sdk's streaming client, in-process.

The task working once its agent is called, then the artifact and the status
completed, or failed for an answer outside the contract (never completed); a
call refused before its agent is one rejected task; the stored task (GetTask)
ends as the stream did; each call is one ledger row.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import GetTaskRequest, SendMessageRequest, StreamResponse, TaskState
from a2a.utils.errors import TaskNotFoundError
from google.protobuf import json_format
from starlette.applications import Starlette

from records import Store
from tests.gateway.server._adder import CAPABILITY
from tests.gateway.server._in_process import (
    BASE_URL,
    in_process_app,
    lifespan,
    raw_stream,
    token,
)
from tests.gateway.server._stream_agent import AGENT, BROKEN, SLOW

pytestmark = pytest.mark.anyio

ROUTED = f"{BASE_URL}/v1/capabilities/{CAPABILITY}"
DIRECT = f"{BASE_URL}/v1/agents/{AGENT}"


@pytest.fixture
def app(sqlite_store: Store, tmp_path: Path) -> Starlette:
    return in_process_app(sqlite_store, tmp_path)


def _message(data: Any) -> SendMessageRequest:
    request = {"message": {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": data}]}}
    return json_format.ParseDict(request, SendMessageRequest())


def _kind(event: StreamResponse) -> str:
    return str(event.WhichOneof("payload"))


async def _stream(
    app: Starlette, key: str, door: str, data: Any
) -> tuple[list[StreamResponse], list[dict[str, Any]], Any]:
    """The stream's events, the caller's ledger rows, and the task as GetTask then says."""
    async with lifespan(app) as http:
        http.headers["Authorization"] = f"Bearer {key}"
        client = await create_client(door, client_config=ClientConfig(httpx_client=http))
        assert client._card.capabilities.streaming  # type: ignore[attr-defined]
        events = [event async for event in client.send_message(_message(data))]
        task_id = events[0].task.id
        stored = None
        for _ in range(100):  # the task's last write follows the stream's last event
            try:
                stored = await client.get_task(GetTaskRequest(id=task_id))
            except TaskNotFoundError:  # a refusal's task: written just after it is sent
                stored = None
            if stored is not None and stored.status.state != TaskState.TASK_STATE_WORKING:
                break
            await asyncio.sleep(0.02)
        rows = (await http.get("/v1/ledger")).json()["items"]
    return events, rows, stored


async def test_a_streamed_message_is_working_then_the_artifact_then_completed(
    app: Starlette, sqlite_store: Store
) -> None:
    events, rows, stored = await _stream(app, token(sqlite_store), ROUTED, {"a": 1, "b": 2})
    assert [_kind(e) for e in events] == ["task", "artifact_update", "status_update"]
    first, artifact, status = events
    assert first.task.status.state == TaskState.TASK_STATE_WORKING
    ids = (first.task.id, first.task.context_id)
    assert (artifact.artifact_update.task_id, artifact.artifact_update.context_id) == ids
    assert artifact.artifact_update.last_chunk
    part = artifact.artifact_update.artifact.parts[0]
    assert json_format.MessageToDict(part.data) == {"sum": 3}
    assert status.status_update.status.state == TaskState.TASK_STATE_COMPLETED
    holon = json_format.MessageToDict(status.status_update.metadata)["holon"]
    assert holon["agent"] == AGENT and holon["request_id"] == rows[0]["request_id"]
    assert stored.status.state == TaskState.TASK_STATE_COMPLETED
    assert json_format.MessageToDict(stored.artifacts[0].parts[0].data) == {"sum": 3}
    assert [(r["decision"], r["outcome"]) for r in rows] == [("allow", "ok")]


async def test_a_streamed_answer_breaking_the_schema_ends_failed_never_completed(
    app: Starlette, sqlite_store: Store
) -> None:
    door = (DIRECT, {"capability": CAPABILITY, "input": {"a": BROKEN, "b": 2}})
    events, rows, stored = await _stream(app, token(sqlite_store), *door)
    assert [_kind(e) for e in events] == ["task", "status_update"]
    assert events[0].task.status.state == TaskState.TASK_STATE_WORKING
    final = events[-1].status_update
    assert final.status.state == TaskState.TASK_STATE_FAILED
    error = json_format.MessageToDict(final.metadata)["holon"]["error"]
    assert error["code"] == "invalid_output"
    assert stored.status.state == TaskState.TASK_STATE_FAILED
    assert [(r["outcome"], r["cost_usd"]) for r in rows] == [("invalid_output", "0")]


async def test_a_call_refused_before_its_agent_is_one_rejected_task(
    app: Starlette, sqlite_store: Store
) -> None:
    key = token(sqlite_store, "caller:stranger")
    events, rows, stored = await _stream(app, key, ROUTED, {"a": 1, "b": 2})
    [only] = events
    assert only.task.status.state == TaskState.TASK_STATE_REJECTED
    error = json_format.MessageToDict(only.task.metadata)["holon"]["error"]
    assert error["code"] == "no_mandate"
    assert stored.status.state == TaskState.TASK_STATE_REJECTED
    assert [r["decision"] for r in rows] == ["deny"]


async def test_a_caller_leaving_mid_stream_leaves_the_task_and_the_call_finished(
    app: Starlette, sqlite_store: Store
) -> None:
    key = token(sqlite_store)
    message = {"messageId": "m-1", "role": "ROLE_USER", "parts": [{"data": {"a": SLOW, "b": 3}}]}
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage"}
    async with lifespan(app) as http:
        path = f"/v1/capabilities/{CAPABILITY}/a2a"
        received = await raw_stream(
            app, key, path, {**body, "params": {"message": message}}, leave_after=1
        )
        [(_at, first)] = received  # the working task, then it went away
        task_id = json.loads(first.removeprefix(b"data: "))["result"]["task"]["id"]
        http.headers["Authorization"] = f"Bearer {key}"
        for _ in range(100):  # the call and the task go on without it
            got = await http.post(
                path, json={**body, "method": "GetTask", "params": {"id": task_id}}
            )
            state = got.json()["result"]["status"]["state"]
            if state != "TASK_STATE_WORKING":
                break
            await asyncio.sleep(0.05)
        rows = (await http.get("/v1/ledger")).json()["items"]
    assert state == "TASK_STATE_COMPLETED"
    assert [(r["status"], r["outcome"]) for r in rows] == [("settled", "ok")]
