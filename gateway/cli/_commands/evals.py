"""`holon eval` (the main job), `holon evals list|status|resume|cancel|import`, `holon records
show`.

`evals list`, `status`, `cancel` and `import` are the operations' own commands
(gateway/operations/_evals.py, _eval_import.py; `import` reads its report from
a file, which the store's errors name). `holon eval` and `evals resume` are commands of
their own: on the store the eval runs in this process (over --processes), with
progress and the result's table; with --gateway they run the operations
evals.start and evals.resume, and follow the eval with evals.show while the
gateway's workers run it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import fields
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.cli._app import (
    command_group,
    common_options,
    gateway_options,
    seconds,
    wait_for_store_option,
)
from gateway.cli._commands import certificates, reports
from gateway.cli._commands.agents import agent_id
from gateway.cli._context import Context
from gateway.cli._operations import Local, command, runs
from gateway.operations import (
    EVALS_CANCEL,
    EVALS_IMPORT,
    EVALS_LIST,
    EVALS_REPORT,
    EVALS_RESUME,
    EVALS_SHOW,
    EVALS_START,
    RECORDS_SHOW,
    EvalRef,
    ReportRequest,
)
from schema import read_text, write_file
from schema.errors import HolonError, Refused, UsageError, checked

if TYPE_CHECKING:
    from gateway.service import EvalsAPI


def _money(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount of dollars") from None
    if not value.is_finite() or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative amount")
    return value


# How long `holon worker` waits for the store before it gives up (exit 3). Long
# enough for a PostgreSQL restart or failover; short enough that a store gone
# for good shows as a failing unit under the worker's supervisor (which restarts
# it, counts it, alerts) instead of a process that looks healthy and does nothing.
MAX_OUTAGE_S = 300.0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    both = [common_options(), gateway_options()]
    run = sub.add_parser(
        "eval",
        parents=both,
        help="evaluate an agent on the suite of every capability it claims (the main job)",
        description="Plan the eval (suites, cells, worst-case cost), confirm, check the agent's "
        "identity, run every cell through the executor with billing off and each suite's cap, "
        "grade, and write the agent's record. Exit 0 when every suite reaches its threshold, 1 "
        "when one does not, 2 on a refusal. Kill it at any point: `holon evals resume ID`.",
    )
    run.add_argument(
        "agent", type=agent_id, metavar="ORG/AGENT", nargs="?", help="the agent to evaluate"
    )
    run.add_argument(
        "--all",
        action="store_true",
        help="evaluate every enabled agent claiming --capability (after a suite's new version)",
    )
    run.add_argument("--capability", metavar="CAP", help="with --all: the capability")
    run.add_argument("--yes", action="store_true", help="run without asking")
    run.add_argument(
        "--junit",
        metavar="FILE",
        type=Path,
        help="also write the eval's report as JUnit XML here (the author audience, safe to "
        "publish: public cases, and each suite's score; `holon evals report --format junit "
        "--audience operator` has the holdout's cases)",
    )
    # --suite to --pace are the EvalOptions: each flag's dest is its field's name, so
    # `_eval_one` builds the options from the field list.
    run.add_argument(
        "--suite",
        action="append",
        dest="suites",
        metavar="ID",
        help="only this suite (a narrowed eval: no record)",
    )
    run.add_argument(
        "--repetitions", type=int, help="override each suite's repetitions (no record)"
    )
    run.add_argument("--concurrency", type=int, default=16, help="cells in flight (default 16)")
    _processes_option(run)
    run.add_argument(
        "--infrastructure-retries",
        type=int,
        default=2,
        dest="retries",
        metavar="INFRASTRUCTURE_RETRIES",  # not the dest's RETRIES
        help="retries of a cell whose agent could not be reached (default 2)",
    )
    run.add_argument("--max-cost", type=_money, metavar="USD", help="refuse a plan costing more")
    run.add_argument(
        "--pace",
        type=float,
        default=0.0,
        dest="pace_s",
        metavar="SECONDS",
        help="at least this long between cells",
    )
    runs(run, EVALS_START, handler=do_eval)  # with --gateway; on the store it runs the eval here

    group = command_group(sub, "evals", "follow, resume, cancel, report and compare evals")
    command(group, "list", EVALS_LIST, parents=both)
    command(group, "status", EVALS_SHOW, parents=both)
    # Not the operation's own command: on the store the eval runs here, with progress.
    resume = group.add_parser("resume", parents=both, help="continue an interrupted eval")
    resume.add_argument("eval_id", metavar="EVAL_ID", help="an eval id (ev_…)")
    _processes_option(resume)
    runs(resume, EVALS_RESUME, handler=do_resume)
    command(group, "cancel", EVALS_CANCEL, parents=both)
    reports.add_to(group)
    command(group, "import", EVALS_IMPORT, parents=both, local=REPORT_FILE)

    worker = sub.add_parser(
        "worker",
        parents=[common_options()],
        help="help with running evals (any host sharing the store)",
        description="Claim and run cells of every running eval, under leases, until stopped. "
        "Several workers on several hosts split one eval; each cell is recorded once. A store "
        "that stops answering is waited for (retrying every 0.5 s, backing off to every 15 s) "
        "for up to --max-outage; at start, for up to --wait-for-store.",
    )
    worker.add_argument("--once", action="store_true", help="stop when no eval has work left")
    worker.add_argument(
        "--poll", type=float, default=1.0, metavar="SECONDS", help="idle wait between looks"
    )
    worker.add_argument(
        "--max-outage",
        type=seconds,
        default=MAX_OUTAGE_S,
        metavar="SECONDS",
        help=f"wait this long for an unreachable store, then exit 3 (default {MAX_OUTAGE_S:g}; "
        "0: exit at once; inf: wait forever)",
    )
    wait_for_store_option(worker)
    worker.set_defaults(handler=do_worker)

    rgroup = command_group(sub, "records", "agent records")
    command(rgroup, "show", RECORDS_SHOW, parents=both)
    certificates.register_record_certificate(rgroup)


def _processes_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="share the eval's concurrency among N local processes, this one and N-1 "
        "forked (default 1; at most 4 per CPU and at most the concurrency; not with "
        "--gateway, whose eval workers run the eval: scale those with `holon worker`)",
    )


def _ops(ctx: Context) -> EvalsAPI:
    """The store's eval operations, or the gateway's (whose workers then run the eval)."""
    return ctx.service().evals


def _confirm(ctx: Context, plan_json: dict[str, Any]) -> None:
    if ctx.args.yes:
        return
    if ctx.stdin.isatty() and not ctx.out.json_mode:
        ctx.out.note(
            f"run {plan_json['cells']} cells, worst case ${plan_json['worst_case_usd']}? [y/N] "
        )
        if ctx.stdin.readline().strip().lower() in ("y", "yes"):
            return
        raise Refused("not confirmed; nothing was run")
    raise Refused(
        "an eval needs confirmation and there is no terminal to ask on",
        hint="add --yes to run it",
    )


def _print_plan(ctx: Context, view: dict[str, Any], processes: int = 1) -> None:
    ctx.out.line(f"plan: {view['agent']} {view['agent_version']}")
    ctx.out.table(
        ["suite", "version", "public", "holdout", "reps", "cells", "cap/case", "worst case"],
        [
            (
                s["id"],
                s["version"],
                s["cases"]["public"],
                s["cases"]["holdout"],
                s["repetitions"],
                s["cells"],
                f"${s['max_cost_usd']}",
                f"${s['worst_case_usd']}",
            )
            for s in view["suites"]
        ],
    )
    for suite in view["suites"]:
        if suite.get("holdout_withheld"):
            ctx.out.warn(suite["holdout_withheld"]["message"])
    if view["unverified_capabilities"]:
        ctx.out.warn(
            "no suite certifies "
            + ", ".join(view["unverified_capabilities"])
            + ": eval_score will be null"
        )
    ctx.out.line(
        f"{view['cells']} cells, worst case ${view['worst_case_usd']}, "
        f"concurrency {view['concurrency']}"
        + ("" if processes == 1 else f" over {processes} local processes")
        + ("" if view["full"] else "; narrowed: no record")
    )


def _print_result(ctx: Context, view: dict[str, Any]) -> None:
    from records import EvalStatus  # here: building the parser never imports the store

    if view["status"] != EvalStatus.DONE:
        ctx.out.line(f"eval {view['id']} is {view['status']}: {view.get('progress')}")
        return
    record = view["record"]
    ctx.out.line()

    def split(part: dict[str, Any] | None) -> str:
        return "-" if part is None else f"{part['passed']}/{part['total']} ({part['rate']})"

    if record is None:  # public-only: rates, and no verdict
        rates = view.get("public_rates") or {}
        ctx.out.table(["suite", "public"], [(sid, split(part)) for sid, part in rates.items()])
        ctx.out.fields(
            [
                ("eval", view["id"]),
                ("verdict", f"none ({view.get('verdict_withheld')})"),
                ("record", "not written (public cases only)"),
            ]
        )
        return
    rows = []
    for suite_id, suite in record["suites"].items():
        rows.append(
            (
                suite_id,
                split(suite["public"]),
                split(suite["holdout"]),
                suite["score"],
                suite["threshold"],
                "yes" if suite["meets_threshold"] else "NO",
                suite["overfit"]["verdict"],
            )
        )
    ctx.out.table(["suite", "public", "holdout", "score", "threshold", "meets", "overfit"], rows)
    ci = record["eval_score_ci95"]
    ctx.out.fields(
        [
            ("eval", view["id"]),
            ("agent", f"{record['agent']} {record['agent_version']}"),
            ("eval_score", record["eval_score"]),
            ("95% CI", None if ci is None else f"{ci[0]}-{ci[1]}"),
            ("weakest suite", record["weakest_suite"]),
            ("unverified", record["unverified_capabilities"]),
            ("warnings", [w["detail"] for w in record["warnings"]] or None),
            ("outcomes", ", ".join(f"{k} {v}" for k, v in view["summary"]["outcomes"].items())),
            ("cost", f"${view['summary']['cost_usd']}"),
            ("record", "written" if view["full_plan"] else "not written (narrowed eval)"),
        ]
    )


def _run_with_progress(ctx: Context, total: int, call: Any) -> dict[str, Any]:
    with ctx.out.progress("eval", total) as update:
        result: dict[str, Any] = call(lambda p: update(p["done"], p["passed"], p["cost_usd"]))
    return result


def do_eval(ctx: Context) -> int:
    args = ctx.args
    if args.all:
        return _eval_all(ctx)
    if args.agent is None:
        raise UsageError("name the agent to evaluate (ORG/AGENT), or --all --capability CAP")
    return _eval_one(ctx, args.agent)[0]


def _eval_all(ctx: Context) -> int:
    args = ctx.args
    if args.agent is not None or not args.capability:
        raise UsageError("--all takes --capability CAP and no agent")
    if args.junit is not None:
        raise UsageError(
            "--junit takes one agent's eval; with --all, write each one with "
            "`holon evals report EVAL_ID --format junit`"
        )
    agents = _ops(ctx).agents_claiming(args.capability)
    if not agents:
        raise Refused(f"no enabled agent claims {args.capability}")
    if not args.yes and not ctx.stdin.isatty():
        raise Refused(
            "an eval needs confirmation and there is no terminal to ask on",
            hint="add --yes to run it",
        )
    # One JSON document for the whole run: each agent's plan and eval, or its error
    # (the error's own body, as a single command would print it).
    results: dict[str, dict[str, Any]] = {}
    worst = 0
    for agent in agents:
        ctx.out.note(f"== {agent}")
        try:
            code, done = _eval_one(ctx, agent, quiet_json=True)
            results[agent] = {"exit_code": code, **done}
        except HolonError as exc:
            if not ctx.out.json_mode:
                ctx.out.error(exc)
            code = exc.exit_code
            results[agent] = {"exit_code": code, **exc.to_body()}
        worst = max(worst, code)
    if ctx.out.json_mode:
        ctx.out.json({"capability": args.capability, "exit_code": worst, "agents": results})
    return worst


def _eval_one(ctx: Context, agent: str, quiet_json: bool = False) -> tuple[int, dict[str, Any]]:
    """The exit code of one agent's eval, and its plan and eval as JSON shows them."""
    from gateway.service import EvalOptions

    args = ctx.args
    ops = _ops(ctx)
    options = EvalOptions(**{f.name: getattr(args, f.name) for f in fields(EvalOptions)})
    proposal = ops.propose(agent, options)
    view = proposal.view
    if not ctx.out.json_mode:
        _print_plan(ctx, view, options.processes)
    _confirm(ctx, view)
    result = _run_with_progress(ctx, proposal.cells, lambda p: ops.execute(proposal, p))
    if args.junit is not None:
        asked = ReportRequest(result["id"], format="junit", audience="author")
        junit = ctx.service().call(EVALS_REPORT, asked)["text"]
        # Whole or not at all: a full disk leaves no half file for CI to read.
        write_file(args.junit, junit.encode("utf-8"))
        ctx.out.note(f"wrote {args.junit}")
    done = {"plan": view, "eval": result}
    if ctx.out.json_mode:
        if not quiet_json:
            ctx.out.json(done)
    else:
        _print_result(ctx, result)
    return checked(bool(result.get("meets_thresholds"))), done


def do_resume(ctx: Context) -> int:
    ops = _ops(ctx)
    status = ctx.service().call(EVALS_SHOW, EvalRef(ctx.args.eval_id))
    processes = ctx.args.processes
    result = _run_with_progress(
        ctx, status["cells"], lambda p: ops.resume(ctx.args.eval_id, p, processes=processes)
    )
    if ctx.out.json_mode:
        ctx.out.json(result)
    else:
        _print_result(ctx, result)
    return checked(bool(result.get("meets_thresholds")))


def _report_file(ctx: Context) -> Mapping[str, Any]:
    """The report from REPORT, at most the operation's bound, sent (or checked on the store)
    as its bytes; the store's errors name the file, and `source` defaults to its name."""
    path: Path = ctx.args.report
    text = read_text(path, max_bytes=EVALS_IMPORT.max_body_bytes, expected="a JSON report")
    return {
        "report": text.encode("utf-8"),
        "file": str(path),
        "source": ctx.args.op_source or path.name,
    }


REPORT_FILE = Local(
    add=lambda p: p.add_argument(
        "report", metavar="REPORT", type=Path, help="the report's JSON file"
    ),
    read=_report_file,
)


def do_worker(ctx: Context) -> int:
    ops = ctx.store_service("worker", wait_s=ctx.args.wait_for_store).evals
    result = ops.work(
        once=ctx.args.once,
        poll_s=ctx.args.poll,
        report=ctx.out.note,
        max_outage_s=ctx.args.max_outage,
    )
    if ctx.out.json_mode:
        ctx.out.json(result)
    return 0
