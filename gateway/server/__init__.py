"""The gateway service: the HTTP API over the store, live calls under mandates."""

from __future__ import annotations

import os

from starlette.applications import Starlette

from gateway.server._app import ENDPOINTS, create_app

__all__ = ["ENDPOINTS", "EVAL_WORKERS_ENV", "app_from_env", "create_app"]

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
