"""The gateway service: a Starlette app built by a factory, served by uvicorn.

`create_app()` builds everything inside the lifespan (the store, the one
executor, background eval workers), never at import time. Every route comes
from the endpoint table (`ENDPOINTS`), which also produces /openapi.json, so
the spec cannot drift from the routes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import logging
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from aiohttp.abc import AbstractResolver
from opentelemetry.trace import Tracer, TracerProvider
from sqlalchemy import func, select
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Match, Route

from agents import AddressGuard, Executor
from gateway import console
from gateway._loops import Loop
from gateway._network import NetworkPolicy
from gateway._roles import OPERATOR
from gateway._tracing import tracing_from_env, tracing_with
from gateway._ttl import REFRESHES
from gateway.live import FLOOR_TICK_S, Canaries, CanaryPolicy, LiveCalls, Lookups
from gateway.server import (
    _a2a,
    _mcp,
    _openai,
    _routes_agents,
    _routes_calls,
    _routes_certificates,
    _routes_evals,
    _routes_tokens,
)
from gateway.server._guard import RequestGuard, log_disconnect
from gateway.server._openapi import openapi
from gateway.server._probes import probe_forever, probe_loop
from gateway.server._revocations import recheck_forever, revocation_loop
from gateway.service import StoreService
from gateway.settings import DEFAULT_BODY_TIMEOUT_S, Settings
from gateway.web import (
    CELLS_TTL_S,
    TOKEN_USES,
    Endpoint,
    Metrics,
    Shared,
    TokenCache,
    admit,
    check_params,
    error_response,
    json_response,
    render_live,
    render_loops,
)
from records import EvalCell, Store
from schema.errors import EnvironmentFault, HolonError, NotFound, StoreUnavailable

log = logging.getLogger(__name__)

__all__ = ["ENDPOINTS", "create_app"]

SWITCH_INTERVAL_S = 0.001  # a server process's GIL switch interval (see create_app)
DISCONNECTED = 499  # the status /metrics counts a request by when its client left first


async def healthz(request: Request, who: Any, shared: Shared) -> Response:
    def ping() -> None:
        with shared.store.read() as session:
            session.execute(select(1))

    try:
        await shared.run(ping)
    except StoreUnavailable as exc:
        return json_response({"status": "unavailable", "database": str(exc)}, 503)
    return json_response({"status": "ok", "database": "ok"})


async def readyz(request: Request, who: Any, shared: Shared) -> Response:
    """Ready while every background loop runs and has succeeded lately (gateway._loops).

    Anyone may ask, as /healthz: the answer names loops, times and counts,
    never an agent, a token or an org.
    """
    states = shared.loops.states()
    loops = {state.name: state.view() for state in states}
    problems = [problem for state in states if (problem := state.problem()) is not None]
    not_ready = [s.name for s in states if not s.ready]
    try:
        # The store answers, and the key this process holds is the store's: signing a
        # card or a record, and reading an agent's secret, need it.
        await shared.run(shared.store.keys.check_ready)
    except HolonError as exc:
        problems.append(exc.message)
        not_ready.append("store")
    if problems:
        raise EnvironmentFault(
            "; ".join(problems),
            code="not_ready",
            details={"not_ready": not_ready, "loops": loops},
        )
    return json_response({"status": "ok", "store": "ok", "loops": loops})


async def openapi_json(request: Request, who: Any, shared: Shared) -> Response:
    return json_response(_openapi_document())


async def metrics(request: Request, who: Any, shared: Shared) -> Response:
    def cells() -> dict[str, int]:
        with shared.store.read() as session:
            rows = session.execute(
                select(EvalCell.outcome_code, func.count()).group_by(EvalCell.outcome_code)
            )
            return {str(code or "pending"): int(n) for code, n in rows}

    # A full scan of the cells table (no index covers outcome_code): cached,
    # so frequent scrapes of a big store cost one count per interval.
    text = shared.metrics.render(await shared.run(shared.metrics.cells.get, cells))
    text += render_live(await shared.run(shared.metrics.live.get, shared.store.conformance.window))
    text += render_loops(shared.loops.states())
    return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")


ENDPOINTS: list[Endpoint] = [
    Endpoint(
        "GET", "/healthz", "none", healthz, "liveness and database reachability", statuses=(503,)
    ),
    Endpoint(
        "GET",
        "/readyz",
        "none",
        readyz,
        "readiness: every background loop running and succeeding lately",
        statuses=(503,),
    ),
    Endpoint("GET", "/openapi.json", "none", openapi_json, "this API's OpenAPI 3.1 document"),
    Endpoint(
        "GET", "/metrics", OPERATOR, metrics, "Prometheus metrics (text format)", media="text/plain"
    ),
    *_routes_agents.ENDPOINTS,
    *_routes_calls.ENDPOINTS,
    *_routes_evals.ENDPOINTS,
    *_routes_tokens.ENDPOINTS,
    *_routes_certificates.ENDPOINTS,
    *_mcp.ENDPOINTS,
    *_a2a.ENDPOINTS,
    *_openai.ENDPOINTS,
]


@functools.cache
def _openapi_document() -> dict[str, Any]:
    return openapi(ENDPOINTS)


def _route(endpoint: Endpoint, state: dict[str, Shared]) -> Route:
    async def handle(request: Request) -> Response:
        shared = state["shared"]
        started = time.perf_counter()
        try:
            bearer = await shared.tokens.bearer(request.headers.get("authorization"), shared.run)
            who = admit(endpoint.access, bearer)
            check_params(request)
            response: Response = await endpoint.handler(request, who, shared)
        except HolonError as exc:
            response = (endpoint.errors or error_response)(exc)
        except ClientDisconnect:
            # Gone before its answer: one quiet line, not an internal error. The
            # response below is for the metrics; the server drops it.
            log_disconnect(endpoint.method, endpoint.path)
            response = Response(status_code=DISCONNECTED)
        except Exception:
            log.exception("internal error on %s %s", endpoint.method, endpoint.path)
            response = (endpoint.errors or error_response)(HolonError("internal error"))
        shared.metrics.request(
            endpoint.method,
            endpoint.path,
            response.status_code,
            (time.perf_counter() - started) * 1000,
        )
        return response

    return Route(endpoint.path, handle, methods=[endpoint.method], name=endpoint.path)


def _start_canaries(
    shared: Shared, executor: Executor, config: Settings, tracer: Any, tick_s: float
) -> asyncio.Task[None] | None:
    """The canaries' loop (gateway.live._canaries), watched as `canaries`; None when the
    settings turn them off."""
    policy = CanaryPolicy(config.canary_share, config.canary_floor, config.canary_ceiling_usd)
    if not policy.on:
        return None
    canaries = Canaries(
        shared.store,
        executor,
        shared.calls.lookups,
        home=config.home,
        policy=policy,
        tracer=tracer,
        report=shared.metrics.canary,
        floor_tick_s=tick_s,
    )
    shared.calls.canaries = canaries
    loop = shared.loops.add(Loop("canaries"))
    task = asyncio.get_running_loop().create_task(canaries.run_forever(loop))
    loop.watch_task(task)
    return task


def create_app(
    settings: Settings | None = None,
    *,
    store: Store | None = None,
    eval_workers: int = 1,
    eval_poll_s: float = 1.0,
    cache_ttl_s: float = 1.0,
    max_body_bytes: int = 8 * 1024 * 1024,
    cells_ttl_s: float = CELLS_TTL_S,
    server_process: bool = False,
    switch_interval_s: float = SWITCH_INTERVAL_S,
    resolver: AbstractResolver | None = None,
    tracer_provider: TracerProvider | None = None,
    canary_tick_s: float = FLOOR_TICK_S,
) -> Starlette:
    """The gateway app. With `store`, that store is used (and not closed); else the settings'.

    `resolver`: how agents' host names are looked up (default: the system's);
    the network policy judges what it answers (tests hand in their own DNS).

    `cells_ttl_s`: how long /metrics reuses its count of eval cells.
    `tracer_provider`: spans go there (tests); else the `OTEL_*` variables say
    (gateway._tracing, off by default), read when the server starts.
    `eval_poll_s`: how long an idle eval worker waits before looking for work again.
    `canary_tick_s`: the mean wait between the canary floor's looks (tests shorten it).
    `server_process` (a process of its own: `holon gateway serve`) tunes the
    process once the app has started. Everything loaded so far is moved out
    of the collector's sight (`gc.freeze()`), so a full collection scans what
    requests allocate, not the modules and the app (50-75 ms a pass here,
    stopping every call). And the GIL's switch interval drops to
    `switch_interval_s` (1 ms; CPython's default is 5 ms): the event loop
    and the threads that share its work (the ledger's group commit, cache
    refreshes, store reads) wait less for each other, which took 10-20% off
    the CPU and the latency of a live call in bench/gateway.
    """
    state: dict[str, Shared] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        config = settings or Settings.from_env()
        own_store = store is None
        opened = store or StoreService.from_settings(config).store
        policy = NetworkPolicy.from_setting(config.agent_networks)
        guard = None if policy.allow_all else policy.judge
        store_service = StoreService(opened, config.home, config.output_retention_days, guard)
        tracing = (
            tracing_with(tracer_provider)
            if tracer_provider is not None
            else tracing_from_env(os.environ)
        )
        async with Executor(allow_asgi=True, address_guard=guard, resolver=resolver) as executor:
            metrics = Metrics(cells_ttl_s)
            shared = Shared(
                store=opened,
                service=store_service,
                calls=LiveCalls(
                    opened,
                    executor,
                    lookups=Lookups(opened, ttl_s=cache_ttl_s),
                    settle_before_answer=False,
                    observe=metrics.ledger,
                    tracer=tracing.tracer,
                ),
                tokens=TokenCache(opened, ttl_s=cache_ttl_s),
                metrics=metrics,
                network=policy,
                max_body_bytes=max_body_bytes,
                eval_on_register=config.eval_on_register,
                body_timeout_s=config.body_timeout_s,
                public_url=config.public_url,
            )
            # mandates.check decides as a call would
            store_service.mandates.decide_with(shared.calls)
            # What /readyz and /metrics watch: this process's shared queues, and the
            # loops of this app (A2A tasks, eval workers, probes) as they start.
            for loop in (TOKEN_USES, REFRESHES, Loop(_a2a.A2A_LOOP)):
                shared.loops.add(loop)
            workers = _EvalWorkers(
                opened,
                config.home,
                eval_workers,
                guard,
                eval_poll_s,
                tracing.tracer,
                prerender=store_service.evals.prerender,
            )
            state["shared"] = shared
            workers.start(shared)
            if server_process:
                gc.collect()
                gc.freeze()
                sys.setswitchinterval(switch_interval_s)
            probes = None
            if config.probe_interval_s > 0:
                watched = shared.loops.add(probe_loop(config.probe_interval_s))
                probes = asyncio.create_task(
                    probe_forever(shared, executor, config.probe_interval_s, watched)
                )
                watched.watch_task(probes)
            canaries = _start_canaries(shared, executor, config, tracing.tracer, canary_tick_s)
            revocations = None
            if config.revocation_interval_s > 0:
                rechecks = shared.loops.add(revocation_loop(config.revocation_interval_s))
                revocations = asyncio.create_task(
                    recheck_forever(shared, config.revocation_interval_s, rechecks)
                )
                rechecks.watch_task(revocations)
            try:
                yield
            finally:
                for task in (probes, canaries, revocations):
                    if task is not None:
                        task.cancel()
                        # A loop that died has had its exception logged (Loop.watch_task);
                        # raised here it would skip the rest: eval workers left running
                        # against a closed store, settlements not drained.
                        with contextlib.suppress(asyncio.CancelledError, Exception):
                            await task
                try:
                    # A2A tasks still running or being written (their calls settle below).
                    await asyncio.gather(*shared.background, return_exceptions=True)
                    await shared.calls.drain()  # settlements of answered calls
                    await shared.run(shared.tokens.drain)  # tokens' last-use times
                finally:
                    # Whatever a drain raised (a store gone down, say; the server logs
                    # it): the eval workers stop and the store closes all the same.
                    workers.stop()
                    try:
                        await asyncio.to_thread(tracing.shutdown)  # the spans still queued
                    finally:
                        if own_store:
                            opened.close()

    def body_timeout_s() -> float:
        shared = state.get("shared")
        return shared.body_timeout_s if shared is not None else DEFAULT_BODY_TIMEOUT_S

    app = Starlette(
        routes=[*(_route(e, state) for e in ENDPOINTS), *console.routes(state)],
        lifespan=lifespan,
        middleware=[Middleware(RequestGuard, timeout_s=body_timeout_s)],
    )
    # No redirect from /v1/agents/ to /v1/agents: Starlette builds its
    # Location from the request's Host header, so anyone could make the
    # gateway point a client at evil.example. A trailing slash is a 404.
    app.router.redirect_slashes = False

    async def not_found(request: Request, exc: Exception) -> Response:
        path = request.url.path
        hint = "no route ends with '/': drop the trailing slash" if path.endswith("/") else None
        return error_response(NotFound(f"no route {request.method} {path}", hint=hint))

    async def not_allowed(request: Request, exc: Exception) -> Response:
        error = HolonError(f"{request.method} is not allowed on {request.url.path}")
        error.code = "method_not_allowed"  # type: ignore[misc]
        response = error_response(error)
        response.status_code = 405
        # Allow: every method the path takes (each endpoint is a route of one
        # method, so Starlette's own header names only the first route's).
        allowed = {
            method
            for route in app.routes
            if isinstance(route, Route) and route.matches(request.scope)[0] is Match.PARTIAL
            for method in route.methods or ()
        }
        response.headers["allow"] = ", ".join(sorted(allowed))
        return response

    async def http_error(request: Request, exc: Exception) -> Response:
        # Any other HTTPException Starlette raises: the one error shape, its status.
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        code = "usage" if status == 400 else f"http_{status}"
        response = error_response(HolonError(str(getattr(exc, "detail", "")) or code, code=code))
        response.status_code = status
        if isinstance(exc, HTTPException) and exc.headers:
            response.headers.update(exc.headers)
        return response

    async def internal(request: Request, exc: Exception) -> Response:
        # Outside the routes' own handling (which logs and answers its own 500s).
        return error_response(HolonError("internal error"))

    app.add_exception_handler(404, not_found)
    app.add_exception_handler(405, not_allowed)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, internal)
    return app


class _EvalWorkers:
    """Background threads that work running evals (started over the API or anywhere),
    their calls judged by the gateway's network policy (`guard`).

    An eval they finish done has its report rendered into the store (`prerender`,
    StoreEvals.prerender) by one more thread, one eval at a time, so its first view
    in any of the gateway's processes is read, not built; the eval's finish never
    waits for it, and a failure is logged. Stopping drops the renders not started
    and waits for the one under way (the store closes next).
    """

    def __init__(
        self,
        store: Store,
        home: Path,
        count: int,
        guard: AddressGuard | None = None,
        poll_s: float = 1.0,
        tracer: Tracer | None = None,
        prerender: Callable[[str], object] | None = None,
    ) -> None:
        self.store = store
        self.prerender = prerender
        self._renders = ThreadPoolExecutor(1, thread_name_prefix="holon-report-prerender")
        self.tracer = tracer
        self.home = home
        self.count = count
        self.guard = guard
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # Replaced by the app's own when started (start()).
        self.loop = Loop("eval-workers")
        self.renders = Loop("report-prerender")

    def start(self, shared: Shared) -> None:
        """Start the threads, watched as the loops `eval-workers` and `report-prerender`."""
        if not self.count:
            return
        self.loop = shared.loops.add(Loop("eval-workers"))
        self.loop.watch(lambda: all(thread.is_alive() for thread in self._threads))
        if self.prerender is not None:
            self.renders = shared.loops.add(Loop("report-prerender"))
        for index in range(self.count):
            thread = threading.Thread(
                target=self._run, name=f"holon-eval-worker-{index}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def _run(self) -> None:
        from evals import run_worker

        while not self._stop.is_set():
            try:
                # Without the store's key no eval could finish here: the loop says so.
                self.store.keys.check_ready()
                # One eval's failure is the worker's `health` report, not an exception here.
                run_worker(
                    self.store,
                    home=self.home,
                    poll_s=self.poll_s,
                    stop=self._stop,
                    address_guard=self.guard,
                    tracer=self.tracer,
                    finished=self._finished,
                    health=self.loop,
                )
            except Exception as exc:  # a worker must outlive anything
                self.loop.failed("the eval worker (restarting in 5 s)", exc)
                self._stop.wait(5)

    def _finished(self, eval_id: str) -> None:
        if self.prerender is not None and not self._stop.is_set():
            self._renders.submit(self._prerender, eval_id)

    def _prerender(self, eval_id: str) -> None:
        assert self.prerender is not None
        try:
            self.prerender(eval_id)
        except Exception as exc:  # the report is rendered when it is first shown instead
            self.renders.failed(f"the report of eval {eval_id}", exc)
        else:
            self.renders.ok()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=30)
        self._renders.shutdown(wait=True, cancel_futures=True)
