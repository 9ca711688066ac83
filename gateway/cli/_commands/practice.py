"""`holon test SUITE --endpoint URL`: practise on a suite's public split (no store needed)."""

from __future__ import annotations

import argparse
from pathlib import Path

from gateway.cli._app import common_options
from gateway.cli._context import Context
from schema.errors import AgentUnreachable, InputError, Location, UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = sub.add_parser(
        "test",
        parents=[common_options()],
        help="run a suite's public cases against an agent you run anywhere",
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
    parser.set_defaults(handler=do_test)


def do_test(ctx: Context) -> int:
    args = ctx.args
    if args.protocol and (args.endpoint or "").startswith("asgi:"):
        raise UsageError("--protocol applies to http(s) endpoints; asgi: is in-process")
    if args.endpoint is None and args.manifest is None:
        raise UsageError("name the agent: --endpoint URL or --manifest FILE")
    # After the usage checks: a mistyped command is answered before the executor,
    # the checks and the fixture generators are imported.
    from agents import load_manifest
    from evals import FixtureCache, load_suite, manifest_agent, practice, practice_agent
    from evals.suites import TrustStore
    from schema import load_schema, make_validator

    if Path(args.suite).exists():
        suite = load_suite(args.suite, trusted=TrustStore(ctx.settings.home).trusted)
    elif not make_validator(load_schema("suite")["properties"]["id"]).is_valid(args.suite):
        # Not an id (ids are lowercase letters, digits and '-'): a path that is not there.
        raise InputError(
            "no such suite directory or suite.yaml",
            location=Location(args.suite),
            hint="give a suite directory, its suite.yaml, or an installed suite's id",
        )
    else:
        # An installed suite: its active version, read from the store.
        suite = ctx.store_client("test SUITE-ID").load_suite(args.suite)
    if args.manifest is not None:
        agent = manifest_agent(load_manifest(args.manifest), args.endpoint, args.protocol)
    else:
        agent = practice_agent(args.endpoint, args.protocol, suite.capability)
    cache = FixtureCache(ctx.settings.home / "cache" / "fixtures")
    total = len(args.case or suite.public) * suite.repetitions
    with ctx.out.progress(f"{suite.id} public", total) as update:
        report = practice(
            suite,
            agent,
            case_ids=args.case,
            concurrency=args.concurrency,
            cache=cache,
            progress=lambda done, _total, passed: update(done, passed),
        )
    if args.junit is not None:
        try:
            args.junit.write_text(report.junit(), encoding="utf-8")
        except OSError as exc:
            raise InputError(
                f"cannot write: {exc.strerror}", location=Location(str(args.junit))
            ) from None
    why = report.unreachable
    if why is not None:
        raise AgentUnreachable(
            f"the agent at {agent.endpoint} could not be reached ({why}); no case was graded",
            details={"endpoint": agent.endpoint, "cells": report.summary()["cells"]},
            hint="start the agent, or check --endpoint",
        )
    if ctx.out.json_mode:
        ctx.out.json(report.to_json())
    else:
        ctx.out.lines(report.lines())
    return report.exit_code
