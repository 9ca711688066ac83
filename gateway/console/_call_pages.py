"""Console pages over mandates, the ledger and tokens: each the API's operation, with
the API's roles (a caller: its own mandates and its own ledger; tokens: operators)."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import replace
from decimal import Decimal
from typing import Any
from urllib.parse import quote

from starlette.responses import Response

from gateway.console import _charts
from gateway.console._web import Web, see_other
from gateway.operations import (
    LEDGER_LIST,
    MANDATES_LIST,
    MANDATES_REVISIONS,
    MANDATES_REVOKE,
    MANDATES_SHOW,
    TOKENS_CREATE,
    TOKENS_LIST,
    TOKENS_REVOKE,
    LedgerQuery,
    MandateRef,
    MandatesQuery,
    TokenRef,
    TokensQuery,
    filters,
)
from gateway.web import parse_body, read_request
from schema.errors import NotFound, UsageError
from schema.jsontext import dumps

PAGE = 50  # ledger rows on a page
CSV_ROWS = 10_000  # rows in one CSV download, at most (the API pages through the rest)
MANDATE_ROWS = 1000  # ledger rows a mandate's page reads for its burn-down and reasons
MAX_MANDATE_BYTES = 256 * 1024  # as POST /v1/mandates
CSV_FIELDS = (
    "at",
    "request_id",
    "caller",
    "mandate",
    "agent",
    "agent_version",
    "capability",
    "decision",
    "reason",
    "status",
    "outcome",
    "reserved_usd",
    "cost_usd",
    "cost_source",
    "latency_ms",
    "period",
)


async def mandates_page(web: Web) -> Response:
    holder = web.who.name if web.who.kind == "caller" else None
    query = MandatesQuery(caller=holder, include_revoked=True, limit=1000)
    view = await web.shared.run(web.shared.service.call, MANDATES_LIST, query)
    return web.page("mandates.html", mandates=view["items"])


def _held(web: Web, mandate_id: str) -> dict[str, Any]:
    view = web.shared.service.call(MANDATES_SHOW, MandateRef(mandate_id))
    # A caller who does not hold it learns no more than of a mandate that does not exist.
    if not web.who.is_operator and view["holder"] != web.who.name:
        raise NotFound(f"no mandate {mandate_id!r}", details={"mandate": mandate_id})
    return view


def burn_down(mandate: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The budget's spend over its current period: what is left after each allowed call."""
    budget = (mandate.get("mandate") or {}).get("budget")
    if not isinstance(budget, dict) or "amount_usd" not in budget:
        return None
    amount = Decimal(str(budget["amount_usd"]))
    periods = [r["period"] for r in rows if r.get("period")]
    current = max(periods) if periods else None
    spent = Decimal(0)
    points: list[tuple[str, Any, Any, Any]] = [("start", amount, None, None)]
    for row in sorted(rows, key=lambda r: str(r["at"])):
        if row.get("period") != current or row["decision"] != "allow":
            continue
        spent += (
            Decimal(row["cost_usd"]) if row["status"] == "settled" else Decimal(row["reserved_usd"])
        )
        points.append((str(row["at"]), amount - spent, None, None))
    return {
        "amount_usd": str(amount),
        "period": budget.get("period"),
        "current": current,
        "spent_usd": str(spent),
        "left_usd": str(amount - spent),
        "points": points[-200:],
        "chart": _charts.line(
            "budget left over the current period",
            points[-200:],
            y_max=amount,
            ceiling=("budget", amount),
        ),
    }


def calls_per_minute(rows: list[dict[str, Any]], minutes: int = 30) -> list[tuple[str, int]]:
    """Calls in each of the last `minutes` minutes that had any (by the rows' UTC times)."""
    counts = Counter(str(row["at"])[:16] for row in rows)
    return sorted(counts.items())[-minutes:]


async def mandate_page(web: Web) -> Response:
    mandate_id = web.request.path_params["mandate"]
    shared = web.shared
    await shared.calls.drain()  # this process's answered calls, read settled (as /v1/ledger)

    def load() -> dict[str, Any]:
        mandate = _held(web, mandate_id)
        query = LedgerQuery(mandate=mandate_id, limit=MANDATE_ROWS)
        rows = shared.service.call(LEDGER_LIST, query)["items"]
        revisions = shared.service.call(MANDATES_REVISIONS, MandateRef(mandate_id))["items"]
        reasons = Counter((r["decision"], r["reason"] or "") for r in rows)
        ordered = sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
        return {
            "mandate": mandate,
            "document": dumps(mandate["mandate"]),
            "revisions": revisions,
            "rows": len(rows),
            "reasons": [{"decision": d, "reason": r, "count": n} for (d, r), n in ordered],
            "reasons_chart": _charts.bars(
                "decisions by reason", [(f"{d} {r}", n) for (d, r), n in ordered[:20]]
            ),
            "burn": burn_down(mandate, rows),
            "latency": _charts.latency_histogram(rows),
            "latency_chart": _charts.bars(
                "latency of answered calls", _charts.latency_histogram(rows)
            ),
            "per_minute": calls_per_minute(rows),
            "per_minute_chart": _charts.bars("calls per minute", calls_per_minute(rows)),
        }

    return web.page("mandate.html", **await shared.run(load))


async def grant_mandate(web: Web) -> Response:
    text = web.field("document")
    if len(text.encode()) > MAX_MANDATE_BYTES:
        raise UsageError(f"a mandate is at most {MAX_MANDATE_BYTES} bytes")
    document = parse_body(text.encode())
    if not isinstance(document, dict):
        raise UsageError("the mandate must be a JSON object (schema/mandate.schema.json)")
    granted_by = web.who.token_id or ""
    view = await web.shared.run(
        lambda: web.shared.service.mandates.grant(
            document, source="<console>", granted_by=granted_by
        )
    )
    return see_other(f"/ui/mandates/{quote(view['mandate']['id'])}")


async def revoke_mandate(web: Web) -> Response:
    mandate_id = web.request.path_params["mandate"]
    await web.shared.run(web.shared.service.call, MANDATES_REVOKE, MandateRef(mandate_id))
    return see_other(f"/ui/mandates/{quote(mandate_id)}")


async def _filters(web: Web) -> LedgerQuery:
    """The ledger's filters from the page's form, read and narrowed as GET /v1/ledger reads
    them (a caller: its own rows only); the page keeps its own page size."""
    query, _ = await read_request(LEDGER_LIST, web.request, form=True)
    assert isinstance(query, LedgerQuery) and LEDGER_LIST.narrow is not None
    return LEDGER_LIST.narrow(web.who, query)


async def ledger_page(web: Web) -> Response:
    query = replace(
        await _filters(web), cursor=web.request.query_params.get("cursor") or None, limit=PAGE
    )
    await web.shared.calls.drain()
    view = await web.shared.run(web.shared.service.call, LEDGER_LIST, query)
    return web.page(
        "ledger.html", rows=view["items"], next_cursor=view["next_cursor"], filters=filters(query)
    )


def _cell(value: Any) -> str:
    """A CSV cell that a spreadsheet shows as text, never runs as a formula."""
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


async def ledger_csv(web: Web) -> Response:
    chosen = await _filters(web)
    await web.shared.calls.drain()

    def rows() -> str:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow(CSV_FIELDS)
        cursor, written = None, 0
        while written < CSV_ROWS:
            query = replace(chosen, cursor=cursor, limit=min(1000, CSV_ROWS - written))
            view = web.shared.service.call(LEDGER_LIST, query)
            for row in view["items"]:
                writer.writerow([_cell(row.get(f)) for f in CSV_FIELDS])
            written += len(view["items"])
            cursor = view["next_cursor"]
            if cursor is None:
                break
        return out.getvalue()

    response = Response(await web.shared.run(rows), media_type="text/csv; charset=utf-8")
    response.headers["Content-Disposition"] = 'attachment; filename="ledger.csv"'
    return response


async def tokens_page(web: Web) -> Response:
    view = await web.shared.run(
        web.shared.service.call, TOKENS_LIST, TokensQuery(include_revoked=True)
    )
    return web.page("tokens.html", tokens=view["items"], created=None)


async def create_token(web: Web) -> Response:
    role = web.field("role").strip()
    note = web.form.get("note", "").strip() or None
    expires_in = web.form.get("expires_in", "").strip() or None
    shared = web.shared

    # The form's fields are named as the request's (an error names `expires_in`).
    values = {"role": role, "note": note, "expires_in": expires_in}
    request = TOKENS_CREATE.build(values, lambda field: field.name)

    def create() -> tuple[dict[str, Any], list[dict[str, Any]]]:
        created = shared.service.call(TOKENS_CREATE, request)
        return created, shared.service.call(TOKENS_LIST, TokensQuery(include_revoked=True))["items"]

    created, tokens = await shared.run(create)
    # The one page that shows the token: the console's no-store keeps it out of caches.
    return web.page("tokens.html", 201, tokens=tokens, created=created)


async def revoke_token(web: Web) -> Response:
    ref = TokenRef(web.request.path_params["token"])
    await web.shared.run(web.shared.service.call, TOKENS_REVOKE, ref)
    return see_other("/ui/tokens")
