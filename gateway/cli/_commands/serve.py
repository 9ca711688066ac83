"""`holon gateway serve`: the gateway service under uvicorn, over the store."""

from __future__ import annotations

import argparse
import os

from gateway.cli._app import command_group, common_options, wait_for_store_option
from gateway.cli._context import Context
from schema.errors import UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = command_group(sub, "gateway", "run the gateway service (store only)")
    serve = group.add_parser(
        "serve",
        parents=[common_options()],
        help="serve the HTTP API over the store until stopped",
        description="Serve the gateway's HTTP API (docs/gateway.md) with uvicorn over the store "
        "(HOLON_DATABASE_URL, or the embedded SQLite file). Evals started through it run in "
        "its eval workers (and in any `holon worker` sharing the store).",
    )
    serve.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    serve.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    serve.add_argument(
        "--workers", type=int, default=1, metavar="N", help="HTTP worker processes (default 1)"
    )
    serve.add_argument(
        "--eval-workers",
        type=int,
        default=1,
        metavar="N",
        help="eval worker threads in each process (default 1; 0: leave evals to `holon worker`)",
    )
    wait_for_store_option(serve)
    serve.set_defaults(handler=do_serve)


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def do_serve(ctx: Context) -> int:
    import uvicorn

    from gateway.server import SERVER_OPTIONS

    args = ctx.args
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be from 0 to 65535, got {args.port}")
    if args.workers < 1:
        raise UsageError("--workers must be at least 1")
    if args.eval_workers < 0:
        raise UsageError("--eval-workers must be 0 or more")
    # The tracing variables (OTEL_*) before anything: a name holon does not ship,
    # or the tracing extra missing, stops us with its own message.
    from gateway._tracing import exporters_from_env

    exporters_from_env(os.environ)
    # Open the store first: a store that is unreachable or on another schema
    # version stops us here with its own message, before anything listens.
    service = ctx.store_service("gateway serve", wait_s=args.wait_for_store)
    level = ctx.settings.log_level.lower()
    ctx.out.note(
        f"holon gateway on {_url(args.host, args.port)} "
        f"({args.workers} worker process(es), {args.eval_workers} eval worker(s) each); "
        "Ctrl-C stops it"
    )
    if args.workers == 1:
        from gateway.server import create_app

        app = create_app(
            ctx.settings, store=service.store, eval_workers=args.eval_workers, server_process=True
        )
        uvicorn.run(app, host=args.host, port=args.port, log_level=level, **SERVER_OPTIONS)  # type: ignore[arg-type]
        return 0
    from gateway.server import EVAL_WORKERS_ENV

    # Worker processes build their own app (and store) from the environment.
    os.environ[EVAL_WORKERS_ENV] = str(args.eval_workers)
    uvicorn.run(
        "gateway.server:app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        log_level=level,
        **SERVER_OPTIONS,  # type: ignore[arg-type]
    )
    return 0
