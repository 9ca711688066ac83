"""The console's list of evals (`/ui/evals`): newest first, filtered and paged, each row
linked to its eval's page, a running eval with its progress.

Roles as the eval pages': an operator sees every eval, an org the evals of its own
agents only (the filter is the store's, so no other org's row is read), a caller
none (the route admits operators and orgs). A running eval's progress is what its
page shows the same role: all cells for an operator, the public cells for an org.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal
from urllib.parse import urlencode

from starlette.responses import Response

from gateway.console._web import Web
from gateway.web import Bearer
from records import EvalFilter, EvalInfo, EvalStatus, Store, utc_text
from schema.errors import UsageError

__all__ = ["FILTERS", "PAGE", "STATUS_NOTES", "STATUS_WORDS", "eval_row", "evals_page"]

PAGE = 50  # evals on a page
REFRESH_S = 10  # while a running eval is on the page, it reloads this often
# What each eval status says on the console's pages (every EvalStatus has one).
STATUS_WORDS: dict[str, str] = {
    EvalStatus.RUNNING: "running",
    EvalStatus.DONE: "done",
    EvalStatus.CANCELLED: "cancelled",
}
# What each status means, beside its word on the eval's page.
STATUS_NOTES: dict[str, str] = {
    EvalStatus.RUNNING: "its cells are being worked by the gateway's eval workers "
    "(or a holon worker); this page follows them",
    EvalStatus.DONE: "every cell is recorded",
    EvalStatus.CANCELLED: "an operator cancelled it: its remaining cells will not run, "
    "and it cannot be resumed (start a new eval)",
}
FILTERS = ("status", "agent", "suite", "capability", "started_by", "from", "to")
STARTED_BY: dict[str, Literal["here", "imported"]] = {"here": "here", "imported": "imported"}
MAX_TEXT = 200


def _text(params: Any, name: str) -> str | None:
    value = str(params.get(name, "")).strip()
    if len(value) > MAX_TEXT:
        raise UsageError(f"{name} is at most {MAX_TEXT} characters", details={"field": name})
    return value or None


def _day(params: Any, name: str) -> date | None:
    value = _text(params, name)
    if value is None:
        return None
    try:
        return date.fromisoformat(value) if len(value) == 10 else _bad_day(name)
    except ValueError:
        return _bad_day(name)


def _bad_day(name: str) -> date:
    raise UsageError(f"{name} must be a date such as 2026-12-31", details={"field": name})


def read_filters(web: Web) -> tuple[EvalFilter, dict[str, str]]:
    """The form's filters, checked (bad input: 400), as a store filter narrowed to the
    role (an org: its own agents), and as the values to show back in the form."""
    params = web.request.query_params
    status = _text(params, "status")
    if status is not None and status not in STATUS_WORDS:
        raise UsageError(f"status must be one of {', '.join(STATUS_WORDS)}")
    started_by = _text(params, "started_by")
    if started_by is not None and started_by not in STARTED_BY:
        raise UsageError("started_by must be here or imported")
    since, until = _day(params, "from"), _day(params, "to")
    if since is not None and until is not None and until < since:
        raise UsageError("the date range ends before it starts: 'to' is before 'from'")
    chosen = {name: _text(params, name) for name in FILTERS}
    where = EvalFilter(
        org=web.who.name if web.who.kind == "org" else None,
        agent=chosen["agent"],
        status=status,
        suite=chosen["suite"],
        capability=chosen["capability"],
        origin=None if started_by is None else STARTED_BY[started_by],
        since=None if since is None else datetime.combine(since, time(), UTC),
        # Before the next day (the last day has none: no bound).
        until=None
        if until is None or until == date.max
        else datetime.combine(until + timedelta(days=1), time(), UTC),
    )
    return where, {k: v for k, v in chosen.items() if v is not None}


def eval_row(store: Store, who: Bearer, info: EvalInfo) -> dict[str, Any]:
    """One eval's row of the list, as `who` may read it."""
    suites = [s for s in info.plan.get("suites") or [] if isinstance(s, dict)]
    row: dict[str, Any] = {
        "id": info.id,
        "agent": info.agent_id,
        "agent_version": info.agent_version,
        "status": info.status,
        "word": STATUS_WORDS.get(info.status, str(info.status)),
        "imported": info.imported,
        "suites": sorted({str(s.get("id")) for s in suites}),
        "capabilities": sorted({str(s.get("capability")) for s in suites}),
        "created_at": utc_text(info.created_at),
        "finished_at": None if info.finished_at is None else utc_text(info.finished_at),
        "progress": None,
    }
    if info.status == EvalStatus.RUNNING:
        # As the eval's page: an author counts the public cells only.
        split = None if who.is_operator else "public"
        counts = store.evals.counts(info.id, split=split)
        total = sum(counts.values())
        row["progress"] = {
            "done": counts.get("done", 0),
            "total": total,
            "percent": round(100 * counts.get("done", 0) / total, 1) if total else 0.0,
            "of": "all" if split is None else "public",
        }
    return row


async def evals_page(web: Web) -> Response:
    where, shown = read_filters(web)
    cursor = web.request.query_params.get("cursor") or None

    def load() -> dict[str, Any]:
        page = web.shared.store.evals.search(where, cursor=cursor, limit=PAGE)
        rows = [eval_row(web.shared.store, web.who, i) for i in page.items]
        return {"rows": rows, "next_cursor": page.next_cursor}

    data = await web.shared.run(load)
    running = any(r["progress"] is not None for r in data["rows"])
    return web.page(
        "evals.html",
        rows=data["rows"],
        filters=shown,
        statuses=list(STATUS_WORDS.items()),
        next_page=None
        if data["next_cursor"] is None
        else urlencode({**shown, "cursor": data["next_cursor"]}),
        first_page=urlencode(shown) if cursor else None,
        refresh_s=REFRESH_S if running else None,
    )
