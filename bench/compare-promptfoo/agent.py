"""The loopback agent both tools call: a deterministic ticket classifier, bare ASGI.

It speaks holon-http (POST `{"capability", "input": {"subject", "body"}}`,
answers `{"output": {...}, "usage": {...}}`; GET `/.well-known/holon-agent`
for the identity probe) and nothing else, so neither tool pays for a
framework on the agent's side. It classifies by the first keyword of the
subject it knows, which the generated suite makes wrong on purpose for some
cases: both tools must then agree on the same pass count (`classify` is the
ground truth the bench checks them against).
"""

from __future__ import annotations

import json
from typing import Any

AGENT_ID = "bench/ticket-keywords"
VERSION = "1.0.0"
IDENTITY = json.dumps({"id": AGENT_ID, "version": VERSION, "capabilities": ["ticket.classify"]})

# Subject keyword -> label, tried in this order (so "Invoice portal down" is billing).
KEYWORDS = (("invoice", "billing"), ("crash", "bug"), ("password", "account"), ("down", "outage"))
USAGE = {"input_tokens": 120, "output_tokens": 16}


def classify(ticket: dict[str, Any]) -> dict[str, Any]:
    subject = str(ticket.get("subject", "")).lower()
    body = str(ticket.get("body", "")).lower()
    label = next((lab for word, lab in KEYWORDS if word in subject), "other")
    priority = "urgent" if "asap" in body else "normal"
    # An over-confident answer for the tickets it cannot place: out of [0, 1].
    confidence = 0.9 if label != "other" else 1.5
    return {"label": label, "priority": priority, "confidence": confidence}


def _headers(body: bytes) -> list[tuple[bytes, bytes]]:
    return [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]


async def _lifespan(receive: Any, send: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await _lifespan(receive, send)
        return
    chunks = []
    more = True
    while more:
        message = await receive()
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    status = 200
    if scope["method"] == "GET":
        body = IDENTITY.encode()
    else:
        try:
            request = json.loads(b"".join(chunks))
            answer = {"output": classify(request["input"]), "usage": USAGE}
            body = json.dumps(answer).encode()
        except (ValueError, KeyError, TypeError, AttributeError):
            status, body = 400, b'{"error": {"code": "bad_request", "message": "not a ticket"}}'
    await send({"type": "http.response.start", "status": status, "headers": _headers(body)})
    await send({"type": "http.response.body", "body": body})
