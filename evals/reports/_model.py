"""The canonical report of one eval (docs/evals.md, "Reports"; `schema/report.schema.json`).

Built from the database only (`open_eval`), with no field that depends on
the time of rendering, so rendering twice gives the same bytes. Scores are
recomputed from the recorded cells with the functions that scored the
record (`evals._scores`), so a running or cancelled eval gets a partial
report whose every aggregate says how much of its sample is missing, and a
finished one shows the same numbers as the record it produced.

Audiences (docs/integrity.md, "What an author can read of an eval"):

- `author` (docs/integrity.md): built from the public cells alone, so every
  case row, check, tag, outcome, latency and cost aggregate is of public
  cases. Of the holdout it shows each suite's split as its rate with its
  interval, and the scores, overfit verdict and record those decide, only
  once the eval is complete; while it runs, the holdout is its size alone
  and the scores are the public cells'. Digests that cover holdout content
  are keyed (HMAC under the store's holdout secret); no epochs, no plan
  digest.
- `operator`: everything, holdout included.
"""

from __future__ import annotations

import platform
from collections.abc import Iterator, Sequence
from typing import Any, Literal, get_args

from agents import frozen_gc
from evals._integrity import author_record
from evals._scores import EvalScore, SuiteCounts, score_eval
from evals.reports._aggregate import CaseTally, CellTotals, milliseconds, rate, rate_block, tag_rows
from evals.reports._attempts import attempt_json
from evals.reports._data import CellData, EvalData, EvalSource, SuiteData, open_eval
from evals.reports._policies import policies_block
from evals.reports._tally import ReportTally
from evals.reports._values import bounded, text_of, timestamp
from records import EvalStatus, Store, imported_view
from schema import __version__
from schema.errors import UsageError

__all__ = [
    "AUDIENCES",
    "REPORT_VERSION",
    "Audience",
    "build_report",
    "materialized",
    "report_from_data",
    "report_of",
    "score_of",
]

Audience = Literal["author", "operator"]
AUDIENCES: tuple[Audience, ...] = get_args(Audience)
# Each format a report renders to, with the media type it is served as.
REPORT_FORMATS = {
    "json": "application/json",
    "md": "text/markdown",
    "html": "text/html",
    "junit": "application/xml",
}
REPORT_VERSION = 1
SPLITS = ("public", "holdout")

CHECK_KEYS = (
    "name",
    "predicate",
    "status",
    "passed",
    "critical",
    "detail",
    "path",
    "expected",
    "actual",
    "offending",
    "metrics",
)
# A check result's fields that are text (`expected` and `actual` are JSON excerpts).
CHECK_TEXT = ("name", "predicate", "status", "detail", "path", "expected", "actual")
METRICS_LIMIT = 2_000
# An answer's metadata is at most 4 KiB of JSON as the executor keeps it; a store may
# hold more (written by hand): past this, a note as for an output.
METADATA_SHOWN = 8_000
# An `each` check over an agent's long array may fail on every item: its first
# offending paths show, then how many more there were.
OFFENDING_SHOWN = 50

ADVICE = {
    "warn": "the agent does markedly better on the public cases than on the holdout, beyond "
    "what chance explains: it may be tuned to the public cases",
    "inconclusive": "the gap reaches delta but the tests are not significant: a larger "
    "holdout would settle it",
}


def check_audience(audience: str) -> Audience:
    if audience not in AUDIENCES:
        raise UsageError(f"unknown audience {audience!r}", details={"expected": list(AUDIENCES)})
    return "operator" if audience == "operator" else "author"


def build_report(store: Store, eval_id: str, *, audience: str = "author") -> dict[str, Any]:
    """The report of `eval_id` for `audience`, every case row in memory; NotFound for an
    unknown eval. A report written out is not held whole (`_renderers.write_report`,
    which says why the collector is held off as it is here)."""
    chosen = check_audience(audience)
    with frozen_gc():
        return materialized(report_of(open_eval(store, eval_id), chosen))


def suite_counts(data: EvalData | EvalSource, cases: Sequence[CaseTally]) -> list[SuiteCounts]:
    """Each suite's counts from the report's case tallies (a report's and a comparison's)."""
    return [
        SuiteCounts.of(
            suite, [(c.split, c.passes, c.runs) for c in cases if c.suite_id == suite.id]
        )
        for suite in data.suites
    ]


def score_of(data: EvalData | EvalSource, cases: Sequence[CaseTally]) -> EvalScore:
    """The eval's scores from its cases, as the record was scored (evals._scores)."""
    counts = suite_counts(data, cases)
    claimed = list(data.info.plan.get("claimed_capabilities", []))
    claimed += [s.capability for s in data.suites if s.capability not in claimed]
    return score_eval(claimed, counts)


def _check(result: dict[str, Any]) -> dict[str, Any]:
    # The schema's shape whatever is stored: text fields as bounded text, flags as booleans.
    out: dict[str, Any] = {
        key: None if result.get(key) is None else text_of(result[key]) for key in CHECK_TEXT
    }
    offending = result.get("offending")
    offending = offending if isinstance(offending, list) else []
    shown = [text_of(o) for o in offending[:OFFENDING_SHOWN]]
    if len(offending) > OFFENDING_SHOWN:
        shown.append(f"… and {len(offending) - OFFENDING_SHOWN} more")
    metrics = result.get("metrics")
    # Most checks have no metrics: nothing to bound (`bounded` would give {} or None back).
    if metrics is not None and metrics != {}:
        metrics = bounded(metrics, METRICS_LIMIT)
    out.update(
        passed=result.get("passed") is True,
        critical=result.get("critical") is True,
        offending=shown,
        metrics=metrics if isinstance(metrics, dict) else {},
    )
    return {key: out[key] for key in CHECK_KEYS}


def _cell(cell: CellData) -> dict[str, Any]:
    return {
        "repetition": cell.repetition,
        "request_id": cell.request_id,
        "status": cell.status,
        "outcome": cell.outcome_code,
        "passed": cell.passed if cell.done else None,
        "latency_ms": None if cell.latency_ms is None else milliseconds(cell.latency_ms),
        "grade_ms": None if cell.grade_ms is None else milliseconds(cell.grade_ms),
        "cost_usd": None if cell.cost_usd is None else str(cell.cost_usd),
        "cost_source": cell.cost_source,
        "attempts": cell.attempts,
        "attempt_log": [attempt_json(a, milliseconds) for a in cell.attempt_log],
        "http_status": cell.http_status,
        "error": cell.error,
        "output": bounded(cell.output) if cell.done else None,
        # The agent's notes on its answer: agent text, bounded as an output is.
        "metadata": bounded(cell.metadata, METADATA_SHOWN)
        if cell.done and cell.metadata is not None
        else None,
        "checks": None if cell.checks is None else [_check(r) for r in cell.checks],
        # The tokens the agent reported, so `usage` recomputes from the cells (evals._import).
        "usage": None
        if cell.input_tokens is None and cell.output_tokens is None
        else {"input_tokens": cell.input_tokens, "output_tokens": cell.output_tokens},
    }


def _case(case: CaseTally, suite: SuiteData, cells: Sequence[CellData]) -> dict[str, Any]:
    known = suite.inputs or {}
    return {
        "split": case.split,
        "case_id": case.case_id,
        # As the suite's case file holds it; only an operator's report has holdout rows.
        "input": bounded(known[(case.split, case.case_id)])
        if (case.split, case.case_id) in known
        else None,
        "case_digest": case.case_digest,
        "tags": list(case.tags),
        "critical": case.critical,
        "runs": case.planned,
        "n": case.runs,
        "missing": case.planned - case.runs,
        "passed": case.passes,
        "score": rate(case.score),
        "cells": [_cell(c) for c in cells],
    }


class CaseRows:
    """A suite's case rows, made from its cells each time they are iterated (a renderer
    may go over them twice), a case at a time: a report's only part whose size grows
    with its cells is never held whole."""

    def __init__(self, tally: ReportTally, suite: SuiteData) -> None:
        self._tally = tally
        self._suite = suite

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for case, cells in self._tally.case_cells(self._suite.id):
            row = _case(case, self._suite, cells)
            del cells  # not held while the next case is read
            yield row


def materialized(report: dict[str, Any]) -> dict[str, Any]:
    """`report` with every suite's case rows made (a list): the whole report in memory."""
    for suite in report["suites"]:
        suite["cases"] = list(suite["cases"])
    return report


def author_holdout(block: dict[str, Any], complete: bool) -> dict[str, Any]:
    """The holdout split as an author reads it (evals._integrity): its rate and interval
    once the eval is complete; before that its size alone, so nothing moves while it runs."""
    if complete:
        return {**block, "stability": None}
    cases, cells = block["cases"], block["cells"]["n"] + block["cells"]["missing"]
    return {
        **rate_block([]),
        "cases": cases,
        "missing": cases,
        "cells": {"n": 0, "missing": cells},
        "withheld": "until the eval is complete",
    }


def _suite(
    position: int,
    tally: ReportTally,
    cases: Sequence[CaseTally],
    score: EvalScore,
    complete: bool,
    holdout: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The plan's `position`-th suite's part of the report. An author's report is built
    from the public cells alone (`cases`, the tally's), with `holdout` the one block it
    may read of that split."""
    suite = tally.source.suites[position]
    operator = tally.operator
    cells = tally.suites.get(suite.id, CellTotals())
    by_split = {split: [c for c in cases if c.split == split] for split in SPLITS}
    scored = score.suites[suite.id]
    overfit = scored.overfit
    splits = {split: rate_block(by_split[split]) for split in SPLITS}
    if holdout is not None:
        splits["holdout"] = holdout
    out: dict[str, Any] = {
        "id": suite.id,
        "version": suite.version,
        "capability": suite.capability,
        "title": suite.title,
        "license": suite.license,
        "suite_digest": suite.suite_digest_for(operator),
        "digests": suite.digests_for(operator),
    }
    if operator:
        out["holdout_epoch"] = suite.holdout_epoch
    out.update(
        {
            "settings": {
                "repetitions": suite.repetitions,
                "max_cost_usd": suite.max_cost_usd,
                "timeout_s": suite.timeout_s,
                "threshold": str(suite.threshold),
                "overfit_delta": str(suite.overfit_delta),
            },
            "score": rate(scored.score),
            # No verdict on part of an eval: missing cells could go either way.
            "meets_threshold": scored.meets_threshold if complete else None,
            "splits": splits,
            "checks": {
                split: tally.checks[position, split].rows(by_split[split])
                if (position, split) in tally.checks
                else []
                for split in SPLITS
                if tally.shows(split)
            },
            "tags": {split: tag_rows(by_split[split]) for split in SPLITS if tally.shows(split)},
            "outcomes": {
                **({"all": cells.outcome_block()} if operator else {}),
                **{
                    split: tally.splits.get((suite.id, split), CellTotals()).outcome_block()
                    for split in SPLITS
                    if tally.shows(split)
                },
            },
            "latency_ms": cells.latency_block(),
            "grading_ms": cells.grading_block(),
            "usage": cells.usage_block(),
            "cost": cells.cost_block(),
            "overfit": {
                **overfit.to_json(),
                "detail": overfit.detail(),
                "advice": ADVICE.get(overfit.verdict),
            },
            "cases": CaseRows(tally, suite),
        }
    )
    return out


def _generated_by(audience: Audience) -> dict[str, Any]:
    """What rendered the report. The host's Python and platform are the operator's to
    know; an author learns holon's version alone."""
    operator = audience == "operator"
    return {
        "holon": __version__,
        "python": platform.python_version() if operator else None,
        "platform": platform.platform(terse=True) if operator else None,
    }


def _record(data: EvalSource, audience: Audience) -> dict[str, Any] | None:
    """None before the eval is done, and for a public-only eval (no verdict: a record
    over public cases alone would be one; its public rates are the suites')."""
    result = data.info.result
    if result is None or not isinstance(result.get("record"), dict):
        return None
    if any(entry.get("holdout_withheld") for entry in data.info.plan.get("suites", [])):
        return None
    value = bounded(result["record"], limit=None)  # holon's own, but a store holds what it holds
    if audience != "operator":
        value = author_record(value)
    # An imported eval wrote no record here, whatever it wrote where it ran.
    written = data.info.full_plan and data.info.status == EvalStatus.DONE and not data.info.imported
    return {"written": written, "value": value}


def report_from_data(data: EvalData, audience: Audience) -> dict[str, Any]:
    """The report of an eval held in memory (an imported one's), whole."""
    return materialized(report_of(data.source(), audience))


def report_of(source: EvalSource, audience: Audience) -> dict[str, Any]:
    """The report, its cells counted in one pass (`ReportTally`) and each suite's case
    rows made as they are iterated (`CaseRows`). An author's is built from the public
    cells alone; of the holdout it reads each split's rate and interval, the scores and
    the overfit verdict, and those only once the eval is complete (docs/integrity.md)."""
    info, plan = source.info, source.info.plan
    tally = ReportTally(source, operator=audience == "operator")
    complete = info.status == EvalStatus.DONE and tally.all_done
    everything = list(tally.cases.values())
    holdouts: dict[str, dict[str, Any]] = {}
    if audience == "operator":
        cases = everything
        score = score_of(source, cases)
    else:
        holdouts = {
            suite.id: author_holdout(
                rate_block(
                    [c for c in everything if c.suite_id == suite.id and c.split == "holdout"]
                ),
                complete,
            )
            for suite in source.suites
        }
        cases = [c for c in everything if c.split == "public"]
        # Complete: the scores the record holds. Running: the public cells' only.
        score = score_of(source, everything if complete else cases)
    eval_json = score.to_json()
    cells = tally.summary
    eval_view: dict[str, Any] = {
        "id": info.id,
        "status": info.status,
        "complete": complete,
        "full_plan": info.full_plan,
    }
    if audience == "operator":
        eval_view["plan_digest"] = info.plan_digest
    eval_view.update(created_at=timestamp(info.created_at), finished_at=timestamp(info.finished_at))
    suites = [
        _suite(
            position,
            tally,
            [c for c in cases if c.suite_id == suite.id],
            score,
            complete,
            holdouts.get(suite.id),
        )
        for position, suite in enumerate(source.suites)
    ]
    recorded = cells.recorded
    withheld = None
    public_only = [
        str((entry.get("holdout_withheld") or {}).get("message") or entry["id"])
        for entry in info.plan.get("suites", [])
        if entry.get("holdout_withheld")
    ]
    if public_only:
        # A score over public cases alone is what an author can tune to: no verdict.
        withheld = "public cases only: " + "; ".join(public_only)
    elif not complete:
        # Counted over the cells this audience sees: an author's count must not move with
        # a holdout cell (docs/integrity.md; tests/integrity/test_spy.py).
        missing = cells.planned - recorded
        kind = "cells" if audience == "operator" else "public cells"
        withheld = (
            f"the eval is {info.status} with {missing} of {cells.planned} {kind} not recorded: "
            "no verdict, and no record" + (" (the plan was full)" if info.full_plan else "")
        )
    return {
        "report_version": REPORT_VERSION,
        "audience": audience,
        "generated_by": _generated_by(audience),
        "eval": eval_view,
        "agent": {
            "id": info.agent_id,
            "version": info.agent_version,
            "claimed_capabilities": list(plan.get("claimed_capabilities", [])),
            # As registered: manifests hold no secrets (those are kept apart, encrypted).
            "manifest": None if source.manifest is None else bounded(source.manifest, limit=None),
        },
        "settings": {
            "concurrency": plan.get("concurrency"),
            "infrastructure_retries": plan.get("infrastructure_retries"),
            "pace_s": str(plan.get("pace_s", 0)),
            "cells": info.cells_total,
            "worst_case_usd": str(plan.get("worst_case_usd", "0")),
        },
        "summary": {
            "eval_score": None if public_only else eval_json["eval_score"],
            "eval_score_ci95": None if public_only else eval_json["eval_score_ci95"],
            "weakest_suite": eval_json["weakest_suite"],
            "unverified_capabilities": eval_json["unverified_capabilities"],
            "meets_thresholds": (
                all(s["meets_threshold"] for s in suites) if complete and not withheld else None
            ),
            "verdict_withheld": withheld,
            "cells": {"n": recorded, "missing": cells.planned - recorded},
            "passed_cells": cells.passed,
            # Cells a check raised on: not passed, yet not failed by the agent either.
            "errors": cells.errors,
            "outcomes": cells.outcome_block(),
            "latency_ms": cells.latency_block(),
            "grading_ms": cells.grading_block(),
            "usage": cells.usage_block(),
            "cost": cells.cost_block(),
        },
        "warnings": eval_json["warnings"],
        "suites": suites,
        "policies": policies_block(source.suites),
        "record": _record(source, audience),
        **(
            {}
            if info.origin is None
            else {"imported": imported_view(info.origin, operator=audience == "operator")}
        ),
    }
