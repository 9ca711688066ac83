"""An operator's JSON report read back as the eval it describes (`EvalData`).

`evals._import` rebuilds the eval of a report this way and renders it again
with `report_from_data`, the function that wrote it, so every derived number
is recomputed by the code that computed it in the first place; and an
imported eval's report, comparison and views are rendered from the same
data. Only an operator's report can be read back: it has every cell, where
an author's has the holdout as one rate per suite.

The reader trusts the report's *shape* (checked against
`schema/report.schema.json` before it is called) and nothing else.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from evals._integrity import author_digests, keyed_digest
from evals.reports._attempts import attempts_of
from evals.reports._data import CellData, EvalData, SuiteData, _http_status, _latency, _tokens
from records import CellStatus, EvalInfo

__all__ = ["data_from_report", "info_from_report", "parse_timestamp"]

TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"


def parse_timestamp(text: str) -> datetime:
    """A report's timestamp (second precision, UTC, `Z`) as an aware datetime."""
    return datetime.strptime(text, TIMESTAMP).replace(tzinfo=UTC)


def _suite_checks(suite: dict[str, Any]) -> int | None:
    # How many leading results of a cell are the suite's own checks: a report names
    # each check row's scope, and a suite's checks are one row each.
    rows = [r for split in suite["checks"].values() for r in split if r["scope"] == "suite"]
    names = {r["name"] for r in rows}
    return len(names) if names else None


def _suite(suite: dict[str, Any], secret: bytes) -> SuiteData:
    settings = suite["settings"]
    digests = suite["digests"]
    inputs = {
        (case["split"], case["case_id"]): case["input"]
        for case in suite["cases"]
        if case["input"] is not None
    }
    return SuiteData(
        id=suite["id"],
        version=suite["version"],
        capability=suite["capability"],
        title=suite["title"],
        suite_digest=suite["suite_digest"],
        digests=None if digests is None else dict(digests),
        holdout_epoch=suite["holdout_epoch"],
        repetitions=settings["repetitions"],
        threshold=Decimal(settings["threshold"]),
        max_cost_usd=settings["max_cost_usd"],
        timeout_s=settings["timeout_s"],
        overfit_delta=Decimal(settings["overfit_delta"]),
        suite_checks=_suite_checks(suite),
        # As this store's authors read them: keyed under this store's holdout secret.
        author_suite_digest=keyed_digest(secret, suite["suite_digest"]),
        author_digests=author_digests(secret, digests),
        license=suite["license"],
        inputs=inputs,
    )


def _cell(idx: int, suite_id: str, case: dict[str, Any], cell: dict[str, Any]) -> CellData:
    usage = cell["usage"] or {}
    done = cell["status"] == CellStatus.DONE
    return CellData(
        idx=idx,
        suite_id=suite_id,
        split=case["split"],
        case_id=case["case_id"],
        case_digest=case["case_digest"],
        repetition=cell["repetition"],
        tags=tuple(case["tags"]),
        request_id=cell["request_id"],
        status=cell["status"],
        outcome_code=cell["outcome"] if done else None,
        passed=cell["passed"] is True,
        cost_usd=None if cell["cost_usd"] is None else Decimal(cell["cost_usd"]),
        cost_source=cell["cost_source"],
        # Read as a stored cell is: a time or a count out of range reads as none, so a
        # report holding one does not recompute (`evals._import` says where).
        latency_ms=_latency(cell["latency_ms"]),
        attempts=cell["attempts"],
        http_status=_http_status(cell["http_status"]),
        error=cell["error"],
        output=cell["output"],
        checks=None if cell["checks"] is None else tuple(cell["checks"]),
        grade_ms=_latency(cell["grade_ms"]),
        input_tokens=_tokens(usage.get("input_tokens")),
        output_tokens=_tokens(usage.get("output_tokens")),
        attempt_log=attempts_of(cell["attempt_log"]),
        metadata=cell["metadata"],
    )


def _plan(report: dict[str, Any]) -> dict[str, Any]:
    """The plan the report's eval ran, as far as a report tells it (what views read)."""
    settings = report["settings"]
    return {
        "claimed_capabilities": list(report["agent"]["claimed_capabilities"]),
        "concurrency": settings["concurrency"],
        "infrastructure_retries": settings["infrastructure_retries"],
        "pace_s": settings["pace_s"],
        "worst_case_usd": settings["worst_case_usd"],
        "suites": [
            {
                "id": s["id"],
                "version": s["version"],
                "capability": s["capability"],
                "suite_digest": s["suite_digest"],
                "holdout_epoch": s["holdout_epoch"],
                "repetitions": s["settings"]["repetitions"],
                "threshold": s["settings"]["threshold"],
                "max_cost_usd": s["settings"]["max_cost_usd"],
                "timeout_s": s["settings"]["timeout_s"],
                "cases": {
                    split: sum(1 for c in s["cases"] if c["split"] == split)
                    for split in ("public", "holdout")
                },
            }
            for s in report["suites"]
        ],
    }


def info_from_report(
    report: dict[str, Any], *, eval_id: str | None = None, origin: dict[str, Any] | None = None
) -> EvalInfo:
    """The eval row a report describes: under its own id, or this store's `eval_id`."""
    view = report["eval"]
    record = report["record"]
    return EvalInfo(
        id=eval_id or view["id"],
        agent_id=report["agent"]["id"],
        agent_version=report["agent"]["version"],
        plan=_plan(report),
        plan_digest=view["plan_digest"],
        full_plan=view["full_plan"],
        status=view["status"],
        cells_total=report["settings"]["cells"],
        created_at=parse_timestamp(view["created_at"]),
        finished_at=None if view["finished_at"] is None else parse_timestamp(view["finished_at"]),
        result=None if record is None else {"record": record["value"]},
        origin=origin,
    )


def data_from_report(report: dict[str, Any], secret: bytes, info: EvalInfo) -> EvalData:
    """The eval an operator's report describes, cells in the report's order."""
    cells: list[CellData] = []
    for suite in report["suites"]:
        for case in suite["cases"]:
            for cell in case["cells"]:
                cells.append(_cell(len(cells), suite["id"], case, cell))
    return EvalData(
        info=info,
        suites=tuple(_suite(s, secret) for s in report["suites"]),
        cells=tuple(cells),
        manifest=report["agent"]["manifest"],
    )
