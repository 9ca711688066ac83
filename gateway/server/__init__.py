"""The gateway service: the HTTP API over the store, live calls under mandates."""

from __future__ import annotations

import os

from starlette.applications import Starlette

from gateway.server._app import ENDPOINTS, create_app

__all__ = ["ENDPOINTS", "EVAL_WORKERS_ENV", "SERVER_OPTIONS", "app_from_env", "create_app"]

# How `holon gateway serve` runs uvicorn (docs/gateway.md, "What the server refuses").
# h11, not httptools: httptools reads request headers without a bound (200 MB
# of them were accepted here); h11 refuses a request whose headers are not
# complete within h11_max_incomplete_event_size bytes (400, connection closed).
# An idle keep-alive connection is closed after timeout_keep_alive seconds; the
# body deadline is the app's own (HOLON_BODY_TIMEOUT_S, gateway/server/_guard.py).
SERVER_OPTIONS: dict[str, object] = {
    "http": "h11",
    "h11_max_incomplete_event_size": 32 * 1024,
    "timeout_keep_alive": 5,
    "access_log": False,
}

# How `holon gateway serve --workers N` tells each worker process how many eval
# workers to run: uvicorn starts them from an import string, not with arguments.
# Private to that hand-off (not a setting).
EVAL_WORKERS_ENV = "_HOLON_SERVE_EVAL_WORKERS"


def app_from_env() -> Starlette:
    """The app, its settings read from the environment.

    For `uvicorn --factory gateway.server:app_from_env`: each worker process builds its own.
    """
    text = os.environ.get(EVAL_WORKERS_ENV, "1")
    return create_app(eval_workers=int(text) if text.isdigit() else 1, server_process=True)
