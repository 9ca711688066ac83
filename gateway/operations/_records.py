"""`records.show`: an agent's current record as evidence, with its live conformance and the
records imported from other issuers' certificates (see _declare.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gateway.operations._declare import (
    Bearer,
    Cli,
    Column,
    Fields,
    Operation,
    Schema,
    entity,
    key,
    standalone,
)
from gateway.operations._registry import AgentRef
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService

# -- records.show --------------------------------------------------------------------

# Where the parts of its answer that are views of their own are (an imported record, a
# capability's live score): `standalone` puts them in place.
_RESPONSES = "https://holon.dev/schema/responses/"


def _record_view() -> dict[str, Any]:
    """The answer of `records.show`: the record (entities/record) with its score as evidence
    and the agent's live conformance (`StoreService.evals.record`); this store's record, or
    without one another issuer's imported record (its `issuer` says whose), and every
    imported record of the version (`imported`)."""
    record, live = entity("record")(), entity("live-conformance")()
    # A capability's counts are the window's: the window is said once, in the total.
    counts = [k for k in live["required"] if k not in ("window_days", "since")]
    return standalone(
        {
            **record,
            "title": "the agent's current record, its score as evidence and its live conformance",
            "required": [*record["required"], "eval_score_lower", "live"],
            "properties": {
                **record["properties"],
                "imported": {
                    "type": "array",
                    "items": {"$ref": _RESPONSES + "imported-record.json"},
                    "description": "the records other issuers' certificates carry of this version, "
                    "newest first; absent when there is none",
                },
                "eval_score_lower": {
                    "type": ["number", "null"],
                    "description": "eval_score as evidence: the lowest lower bound over the graded "
                    "splits, each paid for every org's holdout-revealing evals on its suite "
                    "(holdout_evals; docs/integrity.md); null without an eval_score",
                },
                "live_score": {
                    "type": "object",
                    "description": "the operator's: per capability, the canaries' pass rate since "
                    "the record's eval and over the last window_days, each with its Wilson 95% "
                    "interval (docs/integrity.md, 'Canaries'); absent before the first canary",
                    "additionalProperties": {"$ref": _RESPONSES + "live-score.json"},
                },
                "live": {
                    **{k: v for k, v in live.items() if k != "title"},
                    "description": "the agent's live answers and contract violations over the "
                    "window, in all and by capability",
                    "required": [*live["required"], "capabilities"],
                    "properties": {
                        **live["properties"],
                        "capabilities": {
                            "type": "object",
                            "additionalProperties": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": counts,
                                "properties": {k: live["properties"][k] for k in counts},
                            },
                        },
                    },
                },
            },
        }
    )


def _own_record(who: Bearer, ref: AgentRef) -> AgentRef:
    if who.kind == "org":
        who.require_agent(ref.agent)
    return ref


def _record(service: StoreService, ref: AgentRef) -> JSONObject:
    return service.evals.record(ref.agent)


def _record_for(who: Bearer, _: AgentRef, record: JSONObject, service: StoreService) -> JSONObject:
    """The record as `who` may see it: holdout epochs are the operator's, and each
    holdout split is its rate and interval (docs/integrity.md)."""
    if who.is_operator:
        return record
    from evals import author_record

    return author_record(record)


def _imported_lines(record: JSONObject) -> list[tuple[str, str]]:
    """Whose record it is when another issuer's, and each imported record of the version."""
    lines = []
    if record.get("issuer") is not None:
        lines.append(("issuer", f"{record['issuer']} (an imported record: not evaluated here)"))
    for kept in record.get("imported", []):
        checked = (
            "revocation unchecked"
            if kept["revocation"] == "unchecked"
            else f"revocation checked {kept['last_checked']}"
        )
        lines.append(
            (
                "imported",
                f"{kept['issuer']}: eval_score {kept['eval_score']}, imported "
                f"{kept['imported_at']}, {kept['status']}, {checked}",
            )
        )
    return lines


RECORDS_SHOW = Operation(
    name="records.show",
    method="GET",
    path="/v1/records/{org}/{name}",
    roles="any",
    request=AgentRef,
    summary="the agent's current record",
    run=_record,
    response=Schema(
        _record_view, "the `record` entity with `eval_score_lower`, `live` and `imported`"
    ),
    statuses=(404,),
    narrow=_own_record,
    present=_record_for,
    cli=Cli(
        help="the agent's current record",
        render=Fields(
            (
                Column("agent", lambda r: f"{r['agent']} {r['agent_version']}"),
                Column("eval", key("eval_id")),
                Column("evaluated", key("evaluated_at")),
                Column("eval_score", key("eval_score")),
                Column(
                    "95% CI",
                    lambda r: None if (ci := r["eval_score_ci95"]) is None else f"{ci[0]}-{ci[1]}",
                ),
                # The bound a `min_eval_score_lower` mandate reads (docs/integrity.md).
                Column(
                    "lower bound",
                    lambda r: (
                        f"{r.get('eval_score_lower')} "
                        f"(holdout-revealing evals: {_evals_count(r.get('holdout_evals'))})"
                    ),
                ),
                Column("weakest suite", key("weakest_suite")),
                Column("unverified", key("unverified_capabilities")),
                Column("stale", key("stale")),
                Column("warnings", lambda r: [w["detail"] for w in r["warnings"]] or None),
                Column("live", lambda r: _live_line(r.get("live"))),
            ),
            extra=_imported_lines,
        ),
    ),
)


def _evals_count(holdout_evals: Any) -> str:
    if not isinstance(holdout_evals, dict) or not holdout_evals:
        return "0"
    return ", ".join(f"{n} on {suite}" for suite, n in sorted(holdout_evals.items()))


def _live_line(live: Any) -> str | None:
    """The record's live conformance in a line (docs/gateway.md, "Live conformance")."""
    if not isinstance(live, dict):
        return None
    rate = "-" if live.get("rate") is None else f"{live['rate']}"
    return (
        f"answers {live['calls']}, contract violations {live['violations']} (rate {rate}), "
        f"inputs refused {live['input_violations']}, since {live['since']} "
        f"({live['window_days']} days)"
    )
