"""The operator's list of canaries: what grading agents inside their traffic cost.

Canaries are billed to the operator and never to a caller (gateway.live._canaries),
so they have no ledger row: this list, the operator's only, shows them apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway._roles import OPERATOR
from gateway.operations._declare import (
    Cli,
    Column,
    Operation,
    Table,
    cursor,
    key,
    limit,
    page_of,
    paged,
    param,
)
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService


@dataclass(frozen=True)
class CanariesQuery:
    agent: str | None = param(
        help="one agent's", cli_help="only canaries to this agent", metavar="ORG/NAME"
    )
    limit: int = limit()
    cursor: str | None = cursor()


def _canaries(service: StoreService, query: CanariesQuery) -> JSONObject:
    page = service.store.canaries.list(agent_id=query.agent, cursor=query.cursor, limit=query.limit)
    return paged(page)


CANARIES_LIST = Operation(
    name="canaries.list",
    method="GET",
    path="/v1/canaries",
    roles=OPERATOR,
    request=CanariesQuery,
    summary="canaries graded inside live traffic, newest first (operator): what they cost, "
    "apart from the ledger",
    run=_canaries,
    response=page_of("canary-run"),
    cli=Cli(
        help="canaries sent to agents among their live calls, newest first",
        description="Each canary: a holdout case the gateway sent an agent inside its live "
        "traffic and graded as an eval cell (docs/integrity.md, 'Canaries'). Billed to the "
        "operator, never to a caller's mandate, so it is not in `holon ledger`.",
        render=Table(
            (
                Column("time", key("at")),
                Column("agent", key("agent")),
                Column("capability", key("capability")),
                Column("suite", key("suite")),
                Column("outcome", key("outcome")),
                Column("passed", lambda r: "yes" if r["passed"] else "no"),
                Column("cost", lambda r: f"${r['cost_usd']}"),
                Column("record", key("record_eval_id")),
            ),
            empty="no canaries yet",
        ),
    ),
)
