"""What the console's pages show, as plain data: the same views the API gives, read
through the same service operations, cut to what the signed-in role may see.

Kept apart from the templates so the bench (bench/console) can time the same data
as a JSON listing and as a rendered page.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from evals import author_record
from gateway.web import Bearer, Shared
from records import AgentInfo, AgentRecord, utc_text

__all__ = ["MAX_OVERVIEW", "grouped", "interval_bar", "overview", "record_row"]

MAX_OVERVIEW = 1000  # agents on one overview page (a cursor walks the rest)


def _percent(value: Any) -> float:
    """A rate as a percentage from 0 to 100 (anything but a finite number: 0)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if number != number else round(min(max(number, 0.0), 1.0) * 100, 1)


def interval_bar(score: Any, ci: Any) -> dict[str, float] | None:
    """An interval bar's coordinates (0 to 100): the interval's start and width, the score."""
    if score is None or not isinstance(ci, list | tuple) or len(ci) != 2:
        return None
    low, high = _percent(ci[0]), _percent(ci[1])
    return {"x": low, "w": round(max(high - low, 0.0), 1), "dot": _percent(score)}


def record_row(info: AgentInfo, record: AgentRecord | None) -> dict[str, Any]:
    """One agent's line on the overview: its current record's score, interval, overfit
    verdict and freshness (the record already as the role may read it)."""
    capabilities = info.manifest.get("capabilities") or []
    row: dict[str, Any] = {
        "id": info.id,
        "version": info.version,
        "disabled": info.disabled,
        "capabilities": [str(c) for c in capabilities][:20],
        "eval_score": None,
        "ci95": None,
        "overfit": None,
        "stale": None,
        "drifted": None,
        "evaluated_at": None,
        "eval_id": None,
        "bar": None,
    }
    if record is None:
        return row
    verdicts = [graded.overfit.verdict for graded in record.suites.values()]
    ci = None if record.eval_score_ci95 is None else list(record.eval_score_ci95)
    row.update(
        bar=interval_bar(record.eval_score, ci),
        eval_score=record.eval_score,
        ci95=ci,
        overfit="warn" if "warn" in verdicts else ("ok" if verdicts else None),
        stale=record.stale,
        drifted=record.drifted,  # canaries found it drifting (only a new eval clears it)
        stale_reasons=list(record.stale_reasons or ())[:5],
        evaluated_at=utc_text(record.evaluated_at),
        eval_id=record.eval_id,
    )
    return row


def overview(shared: Shared, who: Bearer, cursor: str | None) -> dict[str, Any]:
    """Agents (an org: its own) with their current records, grouped by capability."""
    org = who.name if who.kind == "org" else None
    page = shared.store.agents.list(
        org=org, include_disabled=True, cursor=cursor, limit=MAX_OVERVIEW
    )
    records = shared.store.evals.current_records_with_staleness(
        [(info.id, info.version) for info in page.items]
    )
    rows = []
    for info in page.items:
        record = records.get(info.id)
        if record is not None and not who.is_operator:
            record = author_record(record)
        rows.append(record_row(info, record))
    return grouped(rows, page.next_cursor)


def grouped(rows: list[dict[str, Any]], next_cursor: str | None) -> dict[str, Any]:
    """The overview's data: agents' rows by capability (an agent under each it claims)."""
    by_capability: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        for capability in row["capabilities"] or ["(none)"]:
            by_capability[capability].append(row)
    return {
        "capabilities": [
            {"capability": c, "agents": by_capability[c]} for c in sorted(by_capability)
        ],
        "agents": len(rows),
        "next_cursor": next_cursor,
    }
