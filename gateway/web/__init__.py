"""What every web door of the gateway shares: who is calling (a bearer token and the
role kinds a route admits), a request's checks and the one error shape, the state the
handlers share, the metrics, and an operation of the table read from a request.

Below the doors that use it: the server's API routes and front doors (gateway/server)
and the console's pages (gateway/console) read requests and admit bearers alike
because both build on this, and neither imports the other's private modules.
"""

from gateway.web._auth import NOT_A_TOKEN, TOKEN_USES, Access, Bearer, TokenCache, admit
from gateway.web._documents import document_response
from gateway.web._http import (
    INLINE_PARSE_BYTES,
    body_object,
    check_params,
    error_headers,
    error_response,
    json_response,
    parse_body,
    read_body,
    read_json,
)
from gateway.web._metrics import CELLS_TTL_S, CachedCounts, Metrics, render_live, render_loops
from gateway.web._observed import observed
from gateway.web._operations import endpoint, read_request
from gateway.web._shared import Endpoint, Shared

__all__ = [
    "CELLS_TTL_S",
    "INLINE_PARSE_BYTES",
    "NOT_A_TOKEN",
    "TOKEN_USES",
    "Access",
    "Bearer",
    "CachedCounts",
    "Endpoint",
    "Metrics",
    "Shared",
    "TokenCache",
    "admit",
    "body_object",
    "check_params",
    "document_response",
    "endpoint",
    "error_headers",
    "error_response",
    "json_response",
    "observed",
    "parse_body",
    "read_body",
    "read_json",
    "read_request",
    "render_live",
    "render_loops",
]
