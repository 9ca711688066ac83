"""A scripted holon-http agent for report tests: it echoes the ticket's subject as its label.

What it answers depends on the subject, so a suite's cases script it:

- `boom…`: HTTP 500 with the error body (outcome `agent_error`);
- `garbage…`: a 200 whose body is not JSON (outcome `invalid_response`);
- `flip…`: version 2 answers the label `flipped` (version 1 echoes it);
- `meta…`: the usual answer, with `metadata` echoing the body (`metabig…`:
  a body's worth of metadata, 2,000 times over);
- anything else: `{"label": subject, "echo": body}`.

Echoing is the point: whatever a case puts in its subject (a `<script>`
payload, a holdout secret) comes back in the output and in the checks'
`actual`, where reports must escape it or keep it from authors.
"""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from schema.jsontext import dumps, loads

AGENT_ID = "test/echo"


def create(version: str) -> Starlette:
    async def invoke(request: Request) -> Response:
        body = loads(await request.body())
        value: dict[str, Any] = body.get("input") or {}
        subject = str(value.get("subject", ""))
        if subject.startswith("boom"):
            error = {"error": {"code": "internal", "message": "boom", "details": {}}}
            return Response(dumps(error), 500, media_type="application/json")
        if subject.startswith("garbage"):
            return Response("this is not JSON", 200, media_type="application/json")
        label = "flipped" if subject.startswith("flip") and version.startswith("2") else subject
        answer = {
            "output": {"label": label, "echo": value.get("body", "")},
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if subject.startswith("meta"):
            copies = 2000 if subject.startswith("metabig") else 1
            answer["metadata"] = {"model": "echo-1", "note": [value.get("body", "")] * copies}
        return Response(dumps(answer), media_type="application/json")

    async def who(request: Request) -> Response:
        identity = {"id": AGENT_ID, "version": version, "capabilities": ["ticket.classify"]}
        return Response(dumps(identity), media_type="application/json")

    return Starlette(
        routes=[
            Route("/", invoke, methods=["POST"]),
            Route("/.well-known/holon-agent", who, methods=["GET"]),
        ]
    )


v1 = create("1.0.0")
v2 = create("2.0.0")
