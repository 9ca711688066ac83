"""Call an example agent in-process (httpx.ASGITransport) or over a real socket."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from schema import validator
from schema.jsontext import dumps, loads


def post_asgi(
    app: Any, body: Any, *, headers: dict[str, str] | None = None, raw: bytes | None = None
) -> httpx.Response:
    """POST `body` (JSON) or `raw` bytes to the app's `/` through httpx.ASGITransport."""
    content = raw if raw is not None else dumps(body).encode()

    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent.test") as client:
            return await client.post(
                "/",
                content=content,
                headers={"content-type": "application/json", **(headers or {})},
            )

    return asyncio.run(go())


def get_asgi(app: Any, path: str) -> httpx.Response:
    async def go() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://agent.test") as client:
            return await client.get(path)

    return asyncio.run(go())


def invoke(capability: str, value: Any) -> dict[str, Any]:
    """The request body holon sends."""
    return {"capability": capability, "input": value}


def output_of(response: httpx.Response, capability: str) -> Any:
    """The 200 answer's output, after checking the envelope and the output schema."""
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = loads(response.content)
    assert set(body) == {"output", "usage"}
    usage = body["usage"]
    assert set(usage) == {"input_tokens", "output_tokens"}
    assert all(isinstance(v, int) and v > 0 for v in usage.values()), usage
    errors = list(validator(f"capabilities/{capability}.output").iter_errors(body["output"]))
    assert not errors, [e.message for e in errors]
    return body["output"]


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    """The error body, after checking the status and the one error shape."""
    assert response.status_code == status, response.text
    body = loads(response.content)
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    error: dict[str, Any] = body["error"]
    return error
