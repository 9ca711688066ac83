"""The `a2a` protocol: Google's Agent2Agent over JSON-RPC, version 1.0 with a v0.3 fallback.

- The agent card lives at ``{endpoint}/.well-known/agent-card.json``. A card
  with `supportedInterfaces` lists (url, protocolBinding, protocolVersion);
  an older card has top-level `url`, `protocolVersion`, `preferredTransport`
  and `additionalInterfaces`. We take a JSON-RPC interface speaking 1.x when
  the card offers one, else one speaking 0.x (sent as v0.3).
- The card's interface URL is used when it has the endpoint's origin; a card
  pointing at another origin (often a stale `localhost` URL) is not followed:
  the call goes to the registered endpoint, because following it would be a
  redirect around the registered address and the gateway's address policy.
- 1.0: method `SendMessage`, header ``A2A-Version: 1.0``, role `ROLE_USER`,
  parts as ``{"data": ...}``. 0.3: method `message/send`, role `user`, parts as
  ``{"kind": "data", "data": ...}``, ``configuration.blocking = true``.
  The message carries one data part ``{capability, input}``; its messageId and
  the JSON-RPC id are the Holon request id, so a retry is recognisable.
- The answer is a Message or a Task. Output is the first data part of the
  Message, or of the Task's artifacts (in order) once the task completed. A
  failed, rejected or canceled task (or one that wants input or auth) is an
  `agent_error`; a task still submitted/working is polled (`GetTask` /
  `tasks/get`) until it settles or the deadline passes.
- SDK agents carry JSON numbers as protobuf doubles (``5`` comes back as
  ``5.0``): integral numbers in the output that a double holds exactly are
  turned back into ints.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal
from urllib.parse import urljoin, urlsplit

from agents._endpoint import parse_endpoint
from schema.jsontext import JSONValue, dumps

__all__ = [
    "CARD_PATH",
    "A2AReply",
    "A2ATarget",
    "CardError",
    "a2a_request",
    "card_identity",
    "get_task_request",
    "interpret_reply",
    "target_from_card",
]

CARD_PATH = "/.well-known/agent-card.json"
Version = Literal["1.0", "0.3"]

_EXACT_DOUBLE_INT = 2**53
_TERMINAL_FAILURES = frozenset({"failed", "rejected", "canceled", "cancelled"})
_INTERRUPTED = frozenset({"input-required", "auth-required"})
_PENDING = frozenset({"submitted", "working", "unspecified", "unknown", ""})


class CardError(Exception):
    """The agent card is not usable; `str()` says why (`invalid_response` / AgentProtocolError)."""


@dataclass(frozen=True)
class A2ATarget:
    """Where and how to send: the JSON-RPC URL and the protocol version to speak."""

    url: str
    version: Version


@dataclass(frozen=True)
class A2AReply:
    """What one JSON-RPC answer means.

    `kind`: ``output`` (with `output`), ``error`` (an agent_error; `detail`),
    ``invalid`` (outside the protocol; `detail`), or ``pending`` (a task to
    poll; `task_id`).
    """

    kind: Literal["output", "error", "invalid", "pending"]
    output: JSONValue = None
    detail: str = ""
    task_id: str = ""


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    default = {"http": 80, "https": 443}.get(parts.scheme)
    try:
        port = parts.port or default
    except ValueError:
        port = -1
    return parts.scheme, (parts.hostname or "").lower(), port


def _version_of(text: Any) -> Version | None:
    if not isinstance(text, str):
        return None
    major = text.strip().split(".", 1)[0]
    if major == "1":
        return "1.0"
    if major == "0":
        return "0.3"
    return None


def target_from_card(card: JSONValue, endpoint: str) -> A2ATarget:
    """Choose the interface to call from a parsed card, or raise CardError."""
    if not isinstance(card, dict):
        raise CardError("agent card is not a JSON object")
    offers: list[tuple[Version, str]] = []
    interfaces = card.get("supportedInterfaces")
    if isinstance(interfaces, list) and interfaces:
        for item in interfaces:
            if not isinstance(item, dict):
                continue
            binding = item.get("protocolBinding", item.get("transport", "JSONRPC"))
            version = _version_of(item.get("protocolVersion") or "0.3")
            url = item.get("url")
            if str(binding).upper() == "JSONRPC" and version and isinstance(url, str):
                offers.append((version, url))
    else:
        version = _version_of(card.get("protocolVersion") or "0.3")
        url = card.get("url")
        if version and isinstance(url, str):
            if str(card.get("preferredTransport", "JSONRPC")).upper() == "JSONRPC":
                offers.append((version, url))
            extra = card.get("additionalInterfaces")
            for item in extra if isinstance(extra, list) else []:
                if (
                    isinstance(item, dict)
                    and str(item.get("transport", "")).upper() == "JSONRPC"
                    and isinstance(item.get("url"), str)
                ):
                    offers.append((version, item["url"]))
    for wanted in ("1.0", "0.3"):
        for version, url in offers:
            if version == wanted:
                return A2ATarget(url=_same_origin_url(url, endpoint), version=version)
    raise CardError("agent card offers no JSON-RPC interface for A2A 1.0 or 0.3")


def _same_origin_url(url: str, endpoint: str) -> str:
    try:
        resolved = urljoin(endpoint, url)
        if _origin(resolved) == _origin(endpoint) and not urlsplit(resolved).fragment:
            # The transport refuses a URL the endpoint rule refuses (a space, a backslash):
            # a card's odd URL falls back to the endpoint, it never fails the call.
            parse_endpoint(resolved)
            return resolved
    except ValueError:  # a malformed URL in the card (e.g. an unclosed IPv6 bracket)
        pass
    return endpoint


def card_identity(card: JSONValue) -> tuple[str, str, tuple[str, ...] | None]:
    """(name, version, skill ids) of a card: how an A2A agent says who it is.

    A card has no holon ``org/name`` id, so the identity's id is the card's
    `name`; callers compare the version, which is the card's `version`, and
    the capabilities are the ids of its `skills` (None: the card has no
    `skills`, so it denies no capability).
    """
    if not isinstance(card, dict):
        raise CardError("agent card is not a JSON object")
    name, version = card.get("name"), card.get("version")
    if not isinstance(name, str) or not isinstance(version, str) or not version:
        raise CardError("agent card lacks a string 'name' and 'version'")
    if "skills" not in card:
        return name, version, None
    skills = card["skills"]
    if not isinstance(skills, list):
        raise CardError("agent card 'skills' is not a list")
    ids = tuple(
        skill["id"]
        for skill in skills
        if isinstance(skill, dict) and isinstance(skill.get("id"), str)
    )
    return name, version, ids


def a2a_request(
    target: A2ATarget, capability: str, input: JSONValue, *, request_id: str
) -> tuple[bytes, dict[str, str]]:
    """The JSON-RPC body and the extra headers of one `a2a` call."""
    data = {"capability": capability, "input": input}
    if target.version == "1.0":
        message: dict[str, Any] = {
            "messageId": request_id,
            "role": "ROLE_USER",
            "parts": [{"data": data}],
        }
        params: dict[str, Any] = {"message": message}
        method, headers = "SendMessage", {"A2A-Version": "1.0"}
    else:
        message = {
            "kind": "message",
            "messageId": request_id,
            "role": "user",
            "parts": [{"kind": "data", "data": data}],
        }
        params = {"message": message, "configuration": {"blocking": True}}
        method, headers = "message/send", {}
    envelope = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return dumps(envelope).encode(), headers


def get_task_request(target: A2ATarget, task_id: str, *, request_id: str) -> bytes:
    """The JSON-RPC body that asks for a task's current state."""
    method = "GetTask" if target.version == "1.0" else "tasks/get"
    envelope = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": {"id": task_id}}
    return dumps(envelope).encode()


def interpret_reply(document: JSONValue) -> A2AReply:
    """Classify one parsed JSON-RPC response (either protocol version)."""
    if not isinstance(document, dict):
        return A2AReply("invalid", detail="JSON-RPC response is not an object")
    if document.get("error") is not None:
        error = document["error"]
        if isinstance(error, dict):
            return A2AReply(
                "error", detail=f"A2A error {error.get('code')}: {error.get('message', '')}"
            )
        return A2AReply("error", detail="A2A error (malformed error object)")
    result = document.get("result")
    if not isinstance(result, dict):
        return A2AReply("invalid", detail="JSON-RPC response has no result object")
    if isinstance(result.get("task"), dict):
        return _task(result["task"])
    if isinstance(result.get("message"), dict):
        return _message(result["message"])
    kind = result.get("kind")
    if kind == "task" or (kind is None and "status" in result and "id" in result):
        return _task(result)
    if kind == "message" or (kind is None and "parts" in result):
        return _message(result)
    return A2AReply("invalid", detail="A2A result is neither a Message nor a Task")


def _first_data(parts: Any) -> tuple[bool, JSONValue]:
    if not isinstance(parts, list):
        return False, None
    for part in parts:
        if isinstance(part, dict) and "data" in part and part.get("kind", "data") == "data":
            return True, _integral_floats(part["data"])
    return False, None


def _message(message: dict[str, Any]) -> A2AReply:
    found, data = _first_data(message.get("parts"))
    if not found:
        return A2AReply("invalid", detail="A2A reply message has no data part")
    return A2AReply("output", output=data)


def _state(task: dict[str, Any]) -> str:
    status = task.get("status")
    state = status.get("state") if isinstance(status, dict) else None
    text = str(state or "").lower().removeprefix("task_state_")
    return text.replace("_", "-")


def _status_text(task: dict[str, Any]) -> str:
    status = task.get("status")
    message = status.get("message") if isinstance(status, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    texts = [
        part["text"]
        for part in (parts if isinstance(parts, list) else [])
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    ]
    return " ".join(texts)


def _task(task: dict[str, Any]) -> A2AReply:
    state = _state(task)
    if state == "completed":
        artifacts = task.get("artifacts")
        for artifact in artifacts if isinstance(artifacts, list) else []:
            if isinstance(artifact, dict):
                found, data = _first_data(artifact.get("parts"))
                if found:
                    return A2AReply("output", output=data)
        return A2AReply("invalid", detail="completed A2A task has no data part in its artifacts")
    if state in _TERMINAL_FAILURES or state in _INTERRUPTED:
        text = _status_text(task)
        return A2AReply("error", detail=f"A2A task {state}" + (f": {text}" if text else ""))
    if state in _PENDING:
        task_id = task.get("id")
        if isinstance(task_id, str) and task_id:
            return A2AReply("pending", task_id=task_id, detail=f"A2A task {state or 'pending'}")
        return A2AReply("invalid", detail="pending A2A task has no id")
    return A2AReply("invalid", detail=f"A2A task in unknown state {state[:40]!r}")


def _integral_floats(value: JSONValue) -> JSONValue:
    """Integral numbers a double holds exactly become ints (`5.0` -> `5`); the rest is unchanged."""
    if isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value():
            as_int = int(value)
            if -_EXACT_DOUBLE_INT <= as_int <= _EXACT_DOUBLE_INT:
                return as_int
        return value
    if isinstance(value, dict):
        return {key: _integral_floats(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral_floats(item) for item in value]
    return value
