"""The holon-http protocol plumbing shared by the example agents.

An example agent is a handful of capability handlers; `create_app` turns them
into a Starlette app that speaks holon-http (docs/agents.md, "The `holon-http` protocol"):

- ``POST /`` with ``{"capability", "input"}`` answers ``200 {"output", "usage"}``;
- ``GET /.well-known/holon-agent`` answers ``{"id", "version", "capabilities"}``;
- anything wrong with the request answers the one error shape
  ``{"error": {"code", "message", "details"}}``: 400 for a malformed request, a
  capability the agent does not serve or an input that breaks the capability's
  input schema; 413 for a body over the cap; 422 for an input that is valid but
  unreadable (a corrupt PDF); 504 when the caller's deadline passes first;
  500 (logged) when the agent itself fails.

Bodies are read incrementally up to a cap and parsed with `schema.jsontext`
(numbers stay exact), inputs are validated against
``schema/capabilities/<capability>.input.json`` before a handler sees them,
and handlers run in a worker thread so a slow parse never blocks the loop.
The ``Holon-Deadline-Ms`` header, when present, bounds that work.
"""

from __future__ import annotations

import argparse
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from jsonschema.exceptions import best_match
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from schema import validator
from schema.errors import HolonError, PayloadTooLarge, UsageError
from schema.jsontext import dumps, loads, max_depth

__all__ = [
    "AgentIdentity",
    "Answer",
    "Handler",
    "PayloadTooLarge",
    "create_app",
    "estimate_tokens",
    "run",
]

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 16 * 1024 * 1024  # a 10 MiB PDF as base64 plus the envelope
MAX_DEPTH = 32
IDENTITY_PATH = "/.well-known/holon-agent"


class DeadlineExceeded(HolonError):
    """The caller's ``Holon-Deadline-Ms`` passed before the answer was ready."""

    code = "deadline_exceeded"
    http_status = 504


@dataclass(frozen=True)
class AgentIdentity:
    """What ``GET /.well-known/holon-agent`` answers; must match the manifest."""

    id: str
    version: str

    def as_json(self, capabilities: Sequence[str]) -> dict[str, Any]:
        return {"id": self.id, "version": self.version, "capabilities": list(capabilities)}


@dataclass(frozen=True)
class Answer:
    """A handler's result: the output and the token counts to report as usage."""

    output: Any
    input_tokens: int
    output_tokens: int


Handler = Callable[[Any], Answer]
"""A capability's implementation: a validated input in, an `Answer` out.

Runs in a worker thread. Raises `schema.errors` exceptions for inputs it
cannot serve (their class carries the HTTP status).
"""


def estimate_tokens(text: str) -> int:
    """A plausible token count for `text` (about four characters a token)."""
    return max(1, math.ceil(len(text) / 4))


def _json(body: Any, status: int = 200) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json")


def _error(exc: HolonError) -> Response:
    return _json(exc.to_body(), exc.http_status)


async def _read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"the request body is over {MAX_BODY_BYTES} bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise PayloadTooLarge(f"the request body is over {MAX_BODY_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_request(body: bytes, capabilities: Sequence[str]) -> tuple[str, Any]:
    try:
        data = loads(body)
    except (ValueError, RecursionError) as exc:
        raise UsageError(f"the request body is not JSON: {exc}", code="bad_request") from None
    if max_depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise UsageError(f"the request is nested deeper than {MAX_DEPTH}", code="bad_request")
    if not isinstance(data, dict):
        raise UsageError("expected a JSON object {capability, input}", code="bad_request")
    unknown = sorted(set(data) - {"capability", "input"})
    if unknown:
        raise UsageError(
            f"unexpected request keys: {', '.join(unknown)}",
            code="bad_request",
            details={"expected": ["capability", "input"]},
        )
    capability = data.get("capability")
    if not isinstance(capability, str):
        raise UsageError("'capability' must be a string", code="bad_request")
    if capability not in capabilities:
        raise UsageError(
            f"this agent does not serve the capability {capability!r}",
            code="unsupported_capability",
            details={"capabilities": list(capabilities)},
        )
    if "input" not in data:
        raise UsageError("the request has no 'input'", code="bad_request")
    return capability, data["input"]


def _validate_input(capability: str, value: Any) -> None:
    error = best_match(validator(f"capabilities/{capability}.input").iter_errors(value))
    if error is None:
        return
    path = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
    message = error.message if len(error.message) <= 300 else error.message[:297] + "..."
    raise UsageError(
        f"input does not match the {capability} input schema at {path}: {message}",
        code="input_schema_violation",
        details={"path": path, "capability": capability},
    )


def _deadline_s(request: Request) -> float | None:
    raw = request.headers.get("holon-deadline-ms")
    if raw is None or not raw.isdigit():
        return None
    return max(0.001, int(raw) / 1000)


def create_app(identity: AgentIdentity, handlers: Mapping[str, Handler]) -> Starlette:
    """A Starlette app serving `handlers` (capability -> handler) over holon-http."""
    capabilities = tuple(handlers)

    async def invoke(request: Request) -> Response:
        try:
            header = request.headers.get("holon-capability")
            capability, value = _parse_request(await _read_body(request), capabilities)
            if header is not None and header != capability:
                raise UsageError(
                    f"the Holon-Capability header says {header!r}, the body {capability!r}",
                    code="bad_request",
                )
            _validate_input(capability, value)
            handler = handlers[capability]
            deadline = _deadline_s(request)
            with anyio.fail_after(deadline):
                answer = await anyio.to_thread.run_sync(handler, value, abandon_on_cancel=True)
        except HolonError as exc:
            logger.info("refused a %s request: %s", identity.id, exc.code)
            return _error(exc)
        except TimeoutError:
            return _error(DeadlineExceeded("the deadline passed before the answer was ready"))
        except Exception:
            # A bug in the agent, not in the request: still the one error shape.
            logger.exception("%s failed on a %s request", identity.id, "holon-http")
            return _error(HolonError("the agent failed on this input"))
        usage = {"input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens}
        return _json({"output": answer.output, "usage": usage})

    async def who(request: Request) -> Response:
        return _json(identity.as_json(capabilities))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        body = {"error": {"code": "http_error", "message": exc.detail, "details": {}}}
        return _json(body, exc.status_code)

    return Starlette(
        routes=[
            Route("/", invoke, methods=["POST"]),
            Route(IDENTITY_PATH, who, methods=["GET"]),
        ],
        exception_handlers={HTTPException: http_error},
    )


def run(app_factory: Callable[[], Starlette], argv: Sequence[str] | None, description: str) -> None:
    """``python -m examples.agents.<module> --port N [--host H]``: serve under uvicorn."""
    import uvicorn

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to bind (default 8000)")
    parser.add_argument("--log-level", default="info", help="uvicorn log level (default info)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(levelname)s %(name)s %(message)s")
    uvicorn.run(app_factory(), host=args.host, port=args.port, log_level=args.log_level)
