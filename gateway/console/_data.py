"""What the console's pages show, as plain data: the same views the API gives, read
through the same client operations, cut to what the signed-in role may see.

Kept apart from the templates so the bench (bench/console) can time the same data
as a JSON listing and as a rendered page.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from evals import author_record
from gateway.server._auth import Principal
from gateway.server._service import Service
from records import AgentInfo

__all__ = ["MAX_OVERVIEW", "overview", "record_row"]

MAX_OVERVIEW = 1000  # agents on one overview page (a cursor walks the rest)


def record_row(info: AgentInfo, record: dict[str, Any] | None) -> dict[str, Any]:
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
        "evaluated_at": None,
        "eval_id": None,
    }
    if record is None:
        return row
    suites = record.get("suites") or {}
    verdicts = [
        (graded.get("overfit") or {}).get("verdict")
        for graded in suites.values()
        if isinstance(graded, dict)
    ]
    row.update(
        eval_score=record.get("eval_score"),
        ci95=record.get("eval_score_ci95"),
        overfit="warn" if "warn" in verdicts else ("ok" if verdicts else None),
        stale=bool(record.get("stale")),
        stale_reasons=list(record.get("stale_reasons") or [])[:5],
        evaluated_at=record.get("evaluated_at"),
        eval_id=record.get("eval_id"),
    )
    return row


def overview(svc: Service, who: Principal, cursor: str | None) -> dict[str, Any]:
    """Agents (an org: its own) with their current records, grouped by capability."""
    org = who.name if who.kind == "org" else None
    page = svc.store.agents.list(org=org, include_disabled=True, cursor=cursor, limit=MAX_OVERVIEW)
    rows = []
    for info in page.items:
        record = svc.store.evals.current_record_with_staleness(
            info.id, info.version, holdout_evals=False
        )
        if record is not None and not who.is_operator:
            record = author_record(record)
        rows.append(record_row(info, record))
    by_capability: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        for capability in row["capabilities"] or ["(none)"]:
            by_capability[capability].append(row)
    return {
        "capabilities": [
            {"capability": c, "agents": by_capability[c]} for c in sorted(by_capability)
        ],
        "agents": len(rows),
        "next_cursor": page.next_cursor,
    }
