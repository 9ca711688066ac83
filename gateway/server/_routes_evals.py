"""Routes over evals: start (worked by the gateway's workers), follow, resume, report, compare.

All but the import come from the operation table (gateway/operations/_evals.py). The
import stays a route of its own: its body is a whole report (up to 20 MiB) checked as
the very bytes sent, so that its errors name the paths in them, not a JSON object of
request fields.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from evals import MAX_REPORT_BYTES
from gateway.operations import (
    EVALS_CANCEL,
    EVALS_COMPARE,
    EVALS_LIST,
    EVALS_REPORT,
    EVALS_RESUME,
    EVALS_SHOW,
    EVALS_START,
)
from gateway.server._auth import Bearer
from gateway.server._http import json_response, read_body
from gateway.server._operations import endpoint
from gateway.server._shared import Endpoint, Shared
from schema.errors import UsageError

OPERATOR = frozenset({"operator"})

IMPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "an operator's JSON report of one eval (schema/report.schema.json, "
    "https://holon.dev/schema/report.schema.json), as GET /v1/evals/{eval}/report"
    "?audience=operator gives it; at most 20 MiB",
}


async def import_eval(request: Request, who: Bearer, shared: Shared) -> Response:
    """Check a report (as `GET /v1/evals/{eval}/report?audience=operator` gives it) and keep
    it as an imported eval; its own body limit, `MAX_REPORT_BYTES`, for this route only."""
    raw = await read_body(request, MAX_REPORT_BYTES)
    if not raw:
        raise UsageError("the request needs a JSON body: the report")
    source = request.query_params.get("source")
    imported_by = who.token_id

    def keep() -> dict[str, Any]:
        return shared.service.evals.import_checked(raw, source=source, imported_by=imported_by)

    return json_response(await shared.run(keep), 201)


ENDPOINTS = [
    endpoint(EVALS_START),
    Endpoint(
        "POST",
        "/v1/evals/import",
        OPERATOR,
        import_eval,
        "import an operator's JSON report of an eval run elsewhere (at most 20 MiB): checked "
        "by recomputing every derived number, kept as an imported eval, no record written",
        # Described, not referenced: the report schema is what the import checks the body
        # against, and a generator drawing whole reports from it (the API fuzz) never ends.
        request=IMPORT_SCHEMA,
        query=(("source", "where the report came from (a file name, a gateway URL), kept"),),
        statuses=(413, 422),
    ),
    endpoint(EVALS_LIST),
    endpoint(EVALS_SHOW),
    endpoint(EVALS_RESUME),
    endpoint(EVALS_CANCEL),
    endpoint(EVALS_REPORT),
    endpoint(EVALS_COMPARE),
]
