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
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench._asgi import json_headers, lifespan, read_body

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


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    received = await read_body(receive)
    status = 200
    if scope["method"] == "GET":
        body = IDENTITY.encode()
    else:
        try:
            request = json.loads(received)
            answer = {"output": classify(request["input"]), "usage": USAGE}
            body = json.dumps(answer).encode()
        except (ValueError, KeyError, TypeError, AttributeError):
            status, body = 400, b'{"error": {"code": "bad_request", "message": "not a ticket"}}'
    await send({"type": "http.response.start", "status": status, "headers": json_headers(body)})
    await send({"type": "http.response.body", "body": body})
