"""The A2A door's stream (`SendStreamingMessage`): a task's life as server-sent events.

A2A's JSON-RPC binding streams one JSON-RPC response per SSE event
(`data: {"jsonrpc": "2.0", "id", "result": <StreamResponse>}`), a
StreamResponse holding one of `task`, `statusUpdate` or `artifactUpdate`.
The events here are made from the task as the door keeps it
(gateway.server._a2a), so a stream and `GetTask` never disagree:

- the task `TASK_STATE_WORKING`, first, once the call is with its agent;
- a completed task: one `artifactUpdate` per artifact (the output, whole:
  `lastChunk` true) and a `statusUpdate` `TASK_STATE_COMPLETED` carrying
  `metadata.holon` (the rest of /invoke's answer);
- a failed task: a `statusUpdate` `TASK_STATE_FAILED` with its message and
  `metadata.holon.error`;
- a task refused before its agent was called: that task alone
  (`TASK_STATE_REJECTED`), the stream's only event.
"""

from __future__ import annotations

from typing import Any

from schema.jsontext import dumps

__all__ = ["ended_events", "task_event"]

RequestId = str | int | None


def task_event(request_id: RequestId, task: dict[str, Any]) -> bytes:
    """The task itself as an event: the first of a stream (or its only one: a refusal)."""
    return _event(request_id, {"task": task})


def ended_events(request_id: RequestId, task: dict[str, Any]) -> bytes:
    """The events of a task that ended: its artifacts, then its final status."""
    ids = {"taskId": task["id"], "contextId": task["contextId"]}
    events = [
        _event(request_id, {"artifactUpdate": {**ids, "artifact": artifact, "lastChunk": True}})
        for artifact in task.get("artifacts", ())
    ]
    update: dict[str, Any] = {**ids, "status": task["status"]}
    if "metadata" in task:
        update["metadata"] = task["metadata"]
    events.append(_event(request_id, {"statusUpdate": update}))
    return b"".join(events)


def _event(request_id: RequestId, result: dict[str, Any]) -> bytes:
    return (
        b"data: "
        + dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
        + (b"\n\n")
    )
