"""`holon test SUITE --endpoint URL`: a practice run on a suite's public split (no store needed).

The module is named for the concept, not the command word: "test" is pytest's
collection prefix and means the project's own tests (docs/glossary.md).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.cli._app import common_options
from gateway.cli._context import Context
from schema import write_file
from schema.errors import AgentUnreachable, HolonError, InputError, Location, UsageError

if TYPE_CHECKING:
    from agents import Manifest
    from evals import Suite


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "test",
        parents=[common_options()],
        help="a practice run: a suite's public cases against an agent you run anywhere",
        description="Run the public split of SUITE against the agent at --endpoint, through the "
        "executor that serves evals, and grade every case. Prints each failing case with its "
        "check detail and a summary; exits 1 below the suite's threshold. Needs no store.",
    )
    parser.add_argument(
        "suite",
        metavar="SUITE",
        help="a suite directory (or its suite.yaml), or an installed suite's id",
    )
    parser.add_argument(
        "--endpoint",
        metavar="URL",
        help="the agent: http(s)://… or asgi:package.module:app",
    )
    parser.add_argument(
        "--manifest",
        metavar="FILE",
        type=Path,
        help="the agent's manifest: its declared limits are sent as on live and eval calls "
        "(--endpoint, if given, replaces its endpoint)",
    )
    parser.add_argument(
        "--protocol",
        choices=["holon-http", "a2a"],
        help="wire protocol for an http(s) endpoint (default holon-http)",
    )
    parser.add_argument(
        "--case", action="append", metavar="ID", help="only this public case (repeatable)"
    )
    parser.add_argument(
        "--concurrency", type=int, default=8, help="cases in flight at once (default 8)"
    )
    parser.add_argument("--junit", metavar="FILE", type=Path, help="also write JUnit XML here")
    parser.add_argument(
        "--html", metavar="FILE", type=Path, help="also write the run as one HTML page here"
    )
    parser.add_argument(
        "--cache",
        action="store_true",
        help="keep the agent's ok answers under HOLON_HOME/cache/responses, keyed by the "
        "request and the agent's identity, and reuse them on later runs (cached cells are "
        "marked; the agent is not called for them)",
    )
    parser.add_argument(
        "--failed",
        action="store_true",
        help="run only the cases that failed in the last run of this suite against this agent",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="run again whenever a file of the suite directory changes (Ctrl-C stops); "
        "with --json, one document a line per run",
    )
    parser.add_argument(
        "--watch-interval",
        type=float,
        default=0.5,
        metavar="SECONDS",
        help="how often --watch looks at the suite's files (default 0.5)",
    )
    parser.set_defaults(handler=do_test)


def do_test(ctx: Context) -> int:
    args = ctx.args
    if args.protocol and (args.endpoint or "").startswith("asgi:"):
        raise UsageError("--protocol applies to http(s) endpoints; asgi: is in-process")
    if args.endpoint is None and args.manifest is None:
        raise UsageError("name the agent: --endpoint URL or --manifest FILE")
    if args.failed and args.case:
        raise UsageError("--failed and --case both choose the cases: give one of them")
    if args.watch and not Path(args.suite).exists():
        raise UsageError("--watch needs a suite directory (or its suite.yaml) to watch")
    if not 0.05 <= args.watch_interval <= 60:
        raise UsageError("--watch-interval must be between 0.05 and 60 seconds")
    if not args.watch:
        with _collector_paused():
            suite = _load(ctx)
        from agents import frozen_gc

        # What was just built stays alive for the run: out of the collector's passes.
        with frozen_gc():
            return _run_once(ctx, suite)
    return _watch(ctx)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection inside: for the phases that only build what stays alive (the
    modules imported and the suite read; the report written out), where every pass of the
    collector walks objects that are all still in use, about a tenth of a 1,000-case run's
    CPU (`gc.callbacks`). Objects without cycles are still freed as they are dropped."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _load(ctx: Context) -> Suite:
    # After the usage checks: a mistyped command is answered before the executor,
    # the checks and the fixture generators are imported.
    from evals import load_suite
    from evals.suites import TrustStore
    from schema import load_schema, make_validator

    args = ctx.args
    if Path(args.suite).exists():
        return load_suite(args.suite, trusted=TrustStore(ctx.settings.home).trusted)
    if not make_validator(load_schema("suite")["properties"]["id"]).is_valid(args.suite):
        # Not an id (ids are lowercase letters, digits and '-'): a path that is not there.
        raise InputError(
            "no such suite directory or suite.yaml",
            location=Location(args.suite),
            hint="give a suite directory, its suite.yaml, or an installed suite's id",
        )
    # An installed suite: its active version, read from the store.
    installed: Suite = ctx.store_service("test SUITE-ID").load_suite(args.suite)
    return installed


def _agent(ctx: Context, suite: Suite) -> Manifest:
    from agents import load_manifest
    from evals import manifest_agent, practice_agent

    args = ctx.args
    if args.manifest is not None:
        return manifest_agent(load_manifest(args.manifest), args.endpoint, args.protocol)
    return practice_agent(args.endpoint, args.protocol, suite.capability)


def _run_once(ctx: Context, suite: Suite) -> int:
    from evals import FixtureCache, LastRuns, ResponseCache, practice

    args = ctx.args
    agent = _agent(ctx, suite)
    cache_root = ctx.settings.home / "cache"
    last_runs = LastRuns(cache_root / "practice")
    case_ids: list[str] | None = args.case
    if args.failed:
        last = last_runs.get(suite.id, agent)
        if last is None:
            raise UsageError(
                f"no earlier run of {suite.id} against {agent.endpoint} to take failures from",
                hint="run it once without --failed",
            )
        known = {case.id for case in suite.public}
        case_ids = [case_id for case_id in last.failed if case_id in known]
        if not case_ids:
            ctx.out.note(f"no case of {suite.id} failed in the last run: nothing to run again")
            if ctx.out.json_mode:
                ctx.out.json(
                    {
                        "suite": {"id": suite.id, "version": suite.version, "split": "public"},
                        "agent": {"endpoint": agent.endpoint, "protocol": agent.protocol},
                        "summary": None,
                        "cases": [],
                    }
                )
            return 0
    responses = ResponseCache(cache_root / "responses") if args.cache else None
    total = len(case_ids or suite.public) * suite.repetitions
    with ctx.out.progress(f"{suite.id} public", total) as update:
        report = practice(
            suite,
            agent,
            case_ids=case_ids,
            concurrency=args.concurrency,
            cache=FixtureCache(cache_root / "fixtures"),
            progress=lambda done, _total, passed: update(done, passed),
            responses=responses,
        )
    _write(args.junit, report.junit)
    _write(args.html, report.html)
    why = report.unreachable
    if why is not None:
        raise AgentUnreachable(
            f"the agent at {agent.endpoint} could not be reached ({why}); no case was graded",
            details={"endpoint": agent.endpoint, "cells": report.summary()["cells"]},
            hint="start the agent, or check --endpoint",
        )
    last_runs.put(
        suite.id,
        suite.version,
        agent,
        ran=[score.case.id for score in report.cases],
        failed=[score.case.id for score in report.cases if score.passes < len(score.cells)],
    )
    with _collector_paused():
        if ctx.out.json_mode:
            ctx.out.json(report.to_json())
        else:
            ctx.out.lines(report.lines())
    return report.exit_code


def _write(path: Path | None, render: Any) -> None:
    if path is not None:
        write_file(path, render().encode("utf-8"))


def _fingerprint(root: Path) -> tuple[tuple[str, int, int], ...]:
    """What --watch compares: every file under the suite's directory, with its mtime and size."""
    folder = root if root.is_dir() else root.parent
    seen = []
    for path in sorted(folder.rglob("*")):
        try:
            info = path.stat()
        except OSError:  # removed between the listing and the look
            continue
        if path.is_file():
            seen.append((str(path.relative_to(folder)), info.st_mtime_ns, info.st_size))
    return tuple(seen)


def _changes(root: Path, interval: float) -> Iterator[None]:
    """Yields once now, then each time the suite's files have changed (and settled)."""
    last = _fingerprint(root)
    yield
    while True:
        time.sleep(interval)
        now = _fingerprint(root)
        if now == last:
            continue
        # An editor saves in steps: wait until two looks agree before running.
        time.sleep(interval)
        settled = _fingerprint(root)
        if settled != now:
            continue
        last = settled
        yield


def _watch(ctx: Context) -> int:
    """Run, then run again on every change, until interrupted (exit 130, as Ctrl-C always is).

    A suite that no longer loads, or an agent that cannot be reached, is
    reported and watched on: the next change runs again.
    """
    root = Path(ctx.args.suite)
    for _ in _changes(root, ctx.args.watch_interval):
        try:
            _run_once(ctx, _load(ctx))
        except HolonError as exc:
            ctx.out.error(exc)
        ctx.out.note(f"watching {root} for changes (Ctrl-C stops)")
    raise AssertionError("unreachable: _changes never ends")
