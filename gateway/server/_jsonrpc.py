"""JSON-RPC 2.0 for the front doors (MCP at /mcp, A2A): one request in, one answer out.

A door's body is read as every body is (gateway.web._http: bounded in
size and depth, exact numbers, no lone surrogates); a body too large is the
gateway's own 413, before any JSON-RPC. What is inside is then held to
JSON-RPC: an object with `"jsonrpc": "2.0"`, a string `method` and, when
present, an object `params` and a string or integer `id`. A message
without an `id` is a notification. Batches (a JSON array) are refused: MCP
dropped them (2025-06-18) and A2A never had them, so accepting one would
only widen what a hostile caller can ask for in one request.

Every error a door answers is a JSON-RPC error object whose `data` is
holon's error body (`{"code", "message", "details"}`, the same as the
HTTP API's `error`), and every text in it that came from the caller (a
method name, a key) is escaped and bounded (`agents._outcome.printable`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from agents import printable
from gateway.web import read_json
from schema.errors import HolonError, UsageError
from schema.jsontext import dumps

log = logging.getLogger(__name__)

__all__ = [
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "RpcError",
    "RpcRequest",
    "answer",
    "read_request",
    "rpc_error",
    "rpc_result",
    "unknown_method",
]

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
MAX_ID_CHARS = 200  # a request id is echoed back: bounded like any caller text
MAX_METHOD_CHARS = 100


@dataclass(frozen=True)
class RpcRequest:
    id: str | int | None  # None: a notification (nothing is answered)
    method: str
    params: dict[str, Any]

    @property
    def is_notification(self) -> bool:
        return self.id is None


class RpcError(Exception):
    """A JSON-RPC error to answer: its integer code, its message and holon's error body."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        holon_code: str = "usage",
        details: dict[str, Any] | None = None,
        request_id: str | int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.holon_code = holon_code
        self.details = details or {}
        self.request_id = request_id

    @classmethod
    def of(cls, error: HolonError, code: int, request_id: str | int | None = None) -> RpcError:
        """A holon error as a JSON-RPC error (its body becomes `data`)."""
        body = error.to_body()["error"]
        return cls(
            code,
            str(body["message"]),
            holon_code=str(body["code"]),
            details=dict(body.get("details") or {}),
            request_id=request_id,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "data": {"code": self.holon_code, "message": self.message, "details": self.details},
        }


async def read_request(request: Request, limit: int) -> RpcRequest:
    """The one JSON-RPC request in the body; RpcError when it is not one (HolonError: too big)."""
    try:
        body = await read_json(request, limit)
    except UsageError as exc:
        if exc.http_status == 413:
            raise
        raise RpcError.of(exc, PARSE_ERROR) from None
    if isinstance(body, list):
        raise RpcError(INVALID_REQUEST, "a JSON-RPC batch is not accepted: send one request")
    if not isinstance(body, dict):
        raise RpcError(INVALID_REQUEST, "a JSON-RPC request is a JSON object")
    request_id = body.get("id")
    if not _valid_id(request_id):
        raise RpcError(
            INVALID_REQUEST,
            "the JSON-RPC id must be a string or an integer",
            details={"path": "$.id"},
        )
    if body.get("jsonrpc") != "2.0":
        raise RpcError(
            INVALID_REQUEST,
            'a JSON-RPC 2.0 request has "jsonrpc": "2.0"',
            details={"path": "$.jsonrpc"},
            request_id=request_id,
        )
    method = body.get("method")
    if not isinstance(method, str) or not method:
        raise RpcError(
            INVALID_REQUEST,
            "the JSON-RPC method must be a string",
            details={"path": "$.method"},
            request_id=request_id,
        )
    params = body.get("params", {})
    if not isinstance(params, dict):
        raise RpcError(
            INVALID_PARAMS,
            "params must be a JSON object",
            details={"path": "$.params"},
            request_id=request_id,
        )
    return RpcRequest(request_id, method, params)


Dispatch = Callable[[RpcRequest], Awaitable[Response]]


async def answer(request: Request, limit: int, dispatch: Dispatch) -> Response:
    """One JSON-RPC exchange, the same at every door: the body read and held to JSON-RPC,
    a notification answered 202 with nothing (Streamable HTTP's rule, which A2A's HTTP
    binding shares), and any RpcError `dispatch` raises answered with the request's id."""
    try:
        rpc = await read_request(request, limit)
    except RpcError as exc:
        return rpc_error(exc)
    if rpc.is_notification:
        return Response(status_code=202)
    try:
        return await dispatch(rpc)
    except RpcError as exc:
        exc.request_id = rpc.id
        return rpc_error(exc)


def unknown_method(request: RpcRequest, known: tuple[str, ...]) -> RpcError:
    shown = printable(request.method, MAX_METHOD_CHARS)
    return RpcError(
        METHOD_NOT_FOUND,
        f"no method {shown!r}; this door answers " + ", ".join(known),
        holon_code="method_not_found",
        details={"method": shown, "methods": list(known)},
        request_id=request.id,
    )


def _valid_id(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return abs(value) < 2**63
    return isinstance(value, str) and len(value) <= MAX_ID_CHARS


def rpc_result(request_id: str | int | None, result: Any) -> Response:
    return _response({"jsonrpc": "2.0", "id": request_id, "result": result})


def rpc_error(error: RpcError, status: int = 200) -> Response:
    return _response({"jsonrpc": "2.0", "id": error.request_id, "error": error.to_json()}, status)


def encode_result(request_id: str | int | None, result: Any) -> bytes:
    return dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


def _response(body: dict[str, Any], status: int = 200) -> Response:
    return Response(dumps(body), status_code=status, media_type="application/json")
