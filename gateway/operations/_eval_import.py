"""`evals.import`: an eval run elsewhere, kept from its report (see _declare.py, _evals.py).

Its body is a whole report, up to 20 MiB, taken as the bytes sent (a `bytes`
document): the run checks those very bytes (evals._import), so its errors name
the places in them (line and column, JSON path), and on the store the file they
were read from (a `local` field, which the command fills). Its body has its own
bound whatever HOLON_MAX_BODY_BYTES says, and checking one takes long enough
(about 1.5 s a MB, docs/performance.md) that the HTTP service waits longer than
its usual timeout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway._roles import OPERATOR
from gateway.operations._declare import (
    Cli,
    Lines,
    Operation,
    document_field,
    entity,
    param,
)
from gateway.operations._narrow import by_bearer, doer
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService

# evals.MAX_REPORT_BYTES, spelled out as AUDIENCES is (_evals.py): importing evals._import
# to build the CLI's parser would load the store. tests/gateway/test_cli_startup.py checks
# they agree.
REPORT_MAX_BYTES = 20 * 1024 * 1024

# Described, not referenced: the report schema is what the import checks the body against,
# and a generator drawing whole reports from it (the API fuzz) never ends.
REPORT_BODY: dict[str, Any] = {
    "type": "object",
    "description": "an operator's JSON report of one eval (schema/report.schema.json, "
    "https://holon.dev/schema/report.schema.json), as GET /v1/evals/{eval}/report"
    "?audience=operator gives it; at most 20 MiB",
}


@dataclass(frozen=True)
class EvalImport:
    # The CLI reads it from REPORT.
    report: bytes = document_field(
        "an operator's JSON report of one eval (schema/report.schema.json)", REPORT_BODY
    )
    source: str | None = param(
        help="where the report came from (a file name, a gateway URL), kept",
        cli_help="where the report came from, kept with it (default: the file's name)",
        metavar="TEXT",
    )
    imported_by: str | None = param(
        help="the importing token's id (on the store: cli:LOGIN)", where="bearer", flag=""
    )
    file: str | None = param(
        help="the file the report was read from, named in its errors", where="local", flag=""
    )


def _import(service: StoreService, asked: EvalImport) -> JSONObject:
    from evals import import_report
    from gateway.service import eval_view

    info = import_report(
        service.store,
        asked.report,
        home=service.home,
        source=asked.source,
        imported_by=doer(asked.imported_by),
        file=asked.file,
    )
    return eval_view(info)


def _imported(view: JSONObject) -> list[str]:
    label = view["imported"]
    return [
        f"imported {label['origin']['eval_id']} as {view['id']} ({view['agent']} "
        f"{view['agent_version']}): its numbers recompute; no record was written",
        *(f"  {suite['suite']}: {suite['cases']}" for suite in label["checked"]),
    ]


EVALS_IMPORT = Operation(
    name="evals.import",
    method="POST",
    path="/v1/evals/import",
    roles=OPERATOR,
    request=EvalImport,
    summary="import an operator's JSON report of an eval run elsewhere (at most 20 MiB): "
    "checked by recomputing every derived number, kept as an imported eval, no record written",
    run=_import,
    response=entity("eval"),
    statuses=(413, 422),
    created=201,
    narrow=by_bearer,
    body_name="the report",
    max_body_bytes=REPORT_MAX_BYTES,
    timeout_s=300.0,  # a 20 MiB report takes about 30 s to check
    cli=Cli(
        help="import an operator's JSON report of an eval run elsewhere, checked",
        description="Check a report that `holon evals report ID --format json --audience "
        "operator` wrote on another store (at most 20 MiB): its schema and counts, every "
        "derived number recomputed from its cells (rates, intervals, stability, overfit "
        "verdicts, scores, eval_score), and, where its suite is installed here with the same "
        "digest, its cases and their grades. The first thing that does not hold refuses it, "
        "with its JSON path, the value the report holds and the recomputed one (exit 2). "
        "Kept as an imported eval: labelled imported in every view, comparable with local "
        "evals, never resumed or cancelled, and never an agent's record. It proves the report "
        "consistent, not that the agent was called (docs/evals.md, Imported evals).",
        render=Lines(_imported),
    ),
)

__all__ = ["EVALS_IMPORT", "REPORT_MAX_BYTES", "EvalImport"]
