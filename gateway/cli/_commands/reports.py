"""`holon evals report` and `holon evals compare`: reports and comparisons of finished evals.

Both are rendered from the store (docs/evals.md, "Reports": are rendered from the
database): by this process on the store, or by the gateway with --gateway.
The audience defaults to `author` (public cases in full, the holdout as one
rate per suite once complete), the safe view to hand on; `--audience operator` shows the
holdout's cases too, and only when asked for.

Exit codes: `report` 0, or 2 for an unknown eval or bad usage; `compare` 0
when the gate passes, 1 when a critical case regressed, 2 when the evals do
not measure the same thing (without `--allow-mismatch`) or on bad usage.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from gateway.cli._app import common_options, gateway_options
from gateway.cli._context import Context
from gateway.cli._operations import runs
from gateway.operations import (
    AUDIENCES,
    COMPARE_FORMATS,
    COMPARE_GATE_RULE,
    EVALS_COMPARE,
    EVALS_REPORT,
    REPORT_FORMATS,
    CompareRequest,
    ReportRequest,
)
from schema import write_file, writing_file
from schema.errors import checked

__all__ = ["AUDIENCES", "COMPARE_FORMATS", "REPORT_FORMATS", "add_to"]


def add_to(group: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add `report` and `compare` to the `holon evals` sub-command group."""
    both = [common_options(), gateway_options()]
    report = group.add_parser(
        "report",
        parents=both,
        help="the report of one eval (json, md, html or junit)",
        description="Render one eval's report from the store: agent and suites with their "
        "digests, settings, per-suite and per-split rates with intervals and denominators, "
        "per-check and per-tag rates, outcome counts, latency, cost, the overfit analysis, "
        "the record it produced and per-case rows. JSON is canonical "
        "(schema/report.schema.json). The author audience (the default) is built from the "
        "public cells and shows of the holdout each suite's rate and interval once the eval "
        "is complete (docs/integrity.md); --audience operator shows its cases too.",
    )
    report.add_argument("eval_id", metavar="EVAL_ID", help="an eval id (ev_…)")
    _format_and_audience(report, REPORT_FORMATS, "json, md, html or junit (JUnit XML for CI)")
    _output(report)
    runs(report, EVALS_REPORT, handler=do_report)

    compare = group.add_parser(
        "compare",
        parents=both,
        help="compare two evals case by case; exit 1 when a critical case regressed",
        description="Pair the cells of two evals on (suite, case digest, repetition) and show "
        "per-suite rate deltas, improved and regressed cases, per-check deltas (pass rates, "
        "and metrics counted improved or regressed by their direction), cost and "
        "latency deltas, and unpaired cells. Refuses (exit 2) unless both evals have the same "
        "suite digests, holdout epochs, grading rules and repetitions; --allow-mismatch "
        "compares anyway, labelled unmatched. "
        f"Exit 1 when the gate fails: it {COMPARE_GATE_RULE}, whatever the totals.",
    )
    compare.add_argument("base", metavar="BASE", help="the eval to compare against")
    compare.add_argument("candidate", metavar="CANDIDATE", help="the eval being judged")
    _format_and_audience(compare, COMPARE_FORMATS, "md, html (one self-contained page) or json")
    compare.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="compare evals of different suites, holdout epochs or repetitions (the result "
        "says unmatched)",
    )
    _output(compare)
    runs(compare, EVALS_COMPARE, handler=do_compare)


def _format_and_audience(
    parser: argparse.ArgumentParser, choices: tuple[str, ...], forms: str
) -> None:
    """`--format` (`forms`: the choices, as the help reads them) and `--audience`."""
    parser.add_argument(
        "--format", choices=choices, help=f"{forms} (default: md; json with --json)"
    )
    parser.add_argument(
        "--audience",
        choices=AUDIENCES,
        default="author",
        help="author (default): public cells, and the holdout's rate per suite once complete; "
        "operator: everything",
    )


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "-o", "--output", metavar="FILE", type=Path, help="write to FILE instead of stdout"
    )


def _format(ctx: Context) -> str:
    chosen: str | None = ctx.args.format
    return chosen or ("json" if ctx.out.json_mode else "md")


def _emit(ctx: Context, text: str, target: Path | None) -> None:
    if target is None:
        ctx.out.stdout.write(text)
        ctx.out.stdout.flush()
        return
    # Whole or not at all: a full disk leaves no half report behind.
    write_file(target, text.encode("utf-8"))
    ctx.out.note(f"wrote {target}")


def do_report(ctx: Context) -> int:
    asked = ReportRequest(ctx.args.eval_id, format=_format(ctx), audience=ctx.args.audience)
    # The report is written as it is made (on the store) or as it arrives (through a
    # gateway): one of 200,000 cells is hundreds of MB of text, never held whole.
    if ctx.on_gateway:
        from gateway.client import HttpService

        gateway = ctx.service()
        assert isinstance(gateway, HttpService)  # on a gateway, its service is over HTTP

        def produce(write: Callable[[str], object]) -> None:
            gateway.write_document(EVALS_REPORT, asked, write)

    else:
        evals = ctx.store_service("evals report").evals

        def produce(write: Callable[[str], object]) -> None:
            evals.write_report(
                asked.eval_id, audience=asked.audience, form=asked.format, write=write
            )

    target: Path | None = ctx.args.output
    if target is None:
        stdout = ctx.out.stdout
        produce(stdout.write)
        stdout.flush()
        return 0
    with writing_file(target) as stream:  # whole or not at all
        produce(lambda chunk: stream.write(chunk.encode("utf-8")))
    ctx.out.note(f"wrote {target}")
    return 0


def do_compare(ctx: Context) -> int:
    from evals.reports import render_comparison
    from schema.jsontext import loads

    # The comparison as JSON, for its gate; another format is rendered from it here, as
    # the gateway would (one comparison, not two).
    asked = CompareRequest(
        ctx.args.base,
        ctx.args.candidate,
        format="json",
        audience=ctx.args.audience,
        allow_mismatch=ctx.args.allow_mismatch,
    )
    text = ctx.service().call(EVALS_COMPARE, asked)["text"]
    comparison = loads(text)
    form = _format(ctx)
    _emit(ctx, text if form == "json" else render_comparison(comparison, form), ctx.args.output)
    gate = comparison["gate"]
    if gate["passed"]:
        return checked(True)
    regressed = gate["critical_regressions"]
    holdout = "not shown" if regressed["holdout"] is None else regressed["holdout"]
    ctx.out.note(
        f"gate failed: critical cases regressed (public {regressed['public']}, holdout {holdout})"
    )
    return checked(False)
