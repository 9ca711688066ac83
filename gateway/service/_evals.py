"""Eval operations of the store's service (the CLI acting as operator)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from agents import AddressGuard
from evals import (
    Plan,
    author_record,
    eval_score_lower,
    imported_refusal,
    live_score,
    make_plan,
    probe,
    resume,
    start,
    work,
)
from gateway.service._interface import EvalOptions
from records import (
    CANARY_WINDOW_DAYS,
    AgentRecord,
    CellStatus,
    EvalInfo,
    EvalStatus,
    ImportedRecord,
    LiveConformance,
    SpentUnit,
    Store,
    live_window_start,
    utc_text,
    utcnow,
)
from schema.errors import NotFound, Refused, StoreUnavailable
from schema.jsontext import JSONObject

Progress = Callable[[dict[str, Any]], None]


def holdout_budget(units: list[SpentUnit]) -> JSONObject:
    """Of a stopped eval, the suites whose holdout unit came back (none of their holdout
    cells was ever claimed) and those whose unit stays spent (docs/integrity.md)."""
    return {
        "refunded": sorted({u.suite_id for u in units if u.refunded_at is not None}),
        "spent": sorted({u.suite_id for u in units if u.refunded_at is None}),
    }


def imported_view(kept: ImportedRecord, now: datetime) -> JSONObject:
    """One imported record as `records show` lists it: whose, since when, its score, and
    whether a mandate may rely on it (docs/certificates.md, "Imported certificates")."""
    return {
        "issuer": kept.record.issuer,
        "certificate_id": kept.certificate_id,
        "eval_id": kept.record.eval_id,
        "eval_score": kept.record.eval_score,
        "evaluated_at": utc_text(kept.record.evaluated_at),
        "imported_at": utc_text(kept.imported_at),
        "expires_at": utc_text(kept.expires_at),
        "status": kept.status(now),
        "revoked_reason": kept.revoked_reason,
        "revocation": "checked" if kept.revocation_checked else "unchecked",
        "last_checked": None if kept.last_checked is None else utc_text(kept.last_checked),
    }


def plan_view(plan: Plan) -> JSONObject:
    view = plan.to_json()
    view["suites"] = [
        {**entry, "cells": planned.cells, "worst_case_usd": str(planned.worst_case_usd)}
        for entry, planned in zip(view["suites"], plan.suites, strict=True)
    ]
    # The holdout epoch is the operator's, and so is the instance set's name (a plain
    # digest of the epoch, or of a stored holdout's cases): the plan view may reach an
    # author.
    for entry in view["suites"]:
        entry.pop("holdout_epoch", None)
        entry.pop("instance_set", None)
    return view


def eval_view(
    info: EvalInfo,
    counts: dict[str, int] | None = None,
    *,
    spent: dict[str, Any] | None = None,
    operator: bool = True,
) -> JSONObject:
    """An eval as the API and the CLI show it (`EvalInfo.to_json`). `operator=False` is what
    anyone else may read (docs/integrity.md): `counts` and `spent` must then be of the
    public split."""
    return info.to_json(counts, spent=spent, author_record=None if operator else author_record)


@dataclass(eq=False)
class EvalOps:
    store: Store
    home: Path
    retention_days: int = 30
    address_guard: AddressGuard | None = None  # a gateway's network policy (its probes)
    _: KW_ONLY
    # The policy for evals this process did not start (docs/settings.md,
    # HOLON_AGENT_NETWORKS): `holon worker` and `evals resume` work anyone's.
    worker_guard: AddressGuard | None = None

    def apply_retention(self) -> int:
        """Drop agent outputs past the retention period (grades stay)."""
        cutoff = datetime.now(UTC) - timedelta(days=self.retention_days)
        return self.store.evals.drop_outputs(cutoff)

    def agents_claiming(self, capability: str) -> list[str]:
        """Every enabled agent claiming `capability` (for `holon eval --all`)."""
        ids: list[str] = []
        cursor = None
        while True:
            page = self.store.agents.list(capability=capability, cursor=cursor, limit=500)
            ids += [a.id for a in page.items]
            if page.next_cursor is None:
                return ids
            cursor = page.next_cursor

    def work(
        self,
        *,
        once: bool,
        poll_s: float,
        report: Callable[[str], None],
        max_outage_s: float | None = None,
    ) -> JSONObject:
        from evals import run_worker

        self.apply_retention()
        # A worker without the store's key would work cells whose eval it could not
        # finish; an unreachable store is waited for below instead.
        with contextlib.suppress(StoreUnavailable):
            self.store.keys.check_ready()
        stats = run_worker(
            self.store,
            home=self.home,
            once=once,
            poll_s=poll_s,
            report=report,
            max_outage_s=max_outage_s,
            address_guard=self.worker_guard,
        )
        return {
            "evals_worked": sorted(stats.evals_worked),
            "evals_finished": sorted(stats.evals_finished),
            "store_outages": stats.store_outages,
            "eval_failures": stats.eval_failures,
        }

    def plan(self, agent_id: str, options: EvalOptions) -> Plan:
        """The eval `options` ask for, planned (their `processes` are the run's)."""
        plan = make_plan(
            self.store,
            agent_id,
            home=self.home,
            only_suites=options.suites,
            repetitions=options.repetitions,
            concurrency=options.concurrency,
            retries=options.retries,
            pace_s=options.pace_s,
        )
        max_cost = options.max_cost
        if max_cost is not None and plan.worst_case_usd > max_cost:
            raise Refused(
                f"the plan's worst case is ${plan.worst_case_usd}, over --max-cost ${max_cost}",
                details={"worst_case_usd": str(plan.worst_case_usd), "max_cost": str(max_cost)},
            )
        return plan

    def begin(self, plan: Plan) -> EvalInfo:
        """Start `plan`: retention applied, the agent's identity probed, its cells created.
        Whoever works running evals (this process, `holon worker`, a gateway) runs it."""
        self.apply_retention()
        probe(self.store, plan, address_guard=self.address_guard)
        return start(self.store, plan)

    def run(self, plan: Plan, progress: Progress | None, *, processes: int = 1) -> JSONObject:
        info = self.begin(plan)
        done = work(self.store, plan, info, home=self.home, progress=progress, processes=processes)
        return eval_view(done, self.store.evals.counts(done.id))

    def resume(self, eval_id: str, progress: Progress | None, *, processes: int = 1) -> JSONObject:
        done = resume(
            self.store,
            eval_id,
            home=self.home,
            progress=progress,
            processes=processes,
            address_guard=self.worker_guard,
        )
        return eval_view(done, self.store.evals.counts(done.id))

    def status(self, eval_id: str, *, operator: bool = True) -> JSONObject:
        """Progress and results; for a non-operator, of the public cells only, so nothing
        in it moves with a holdout cell while the eval runs (docs/integrity.md)."""
        info = self.store.evals.get(eval_id)
        split = None if operator else "public"
        if info.imported and info.result is not None:
            # No cells here: its progress is the summary its report was checked against.
            done = info.result["summary" if operator else "public_summary"]
            counts: dict[str, int] = {**dict.fromkeys(CellStatus, 0), CellStatus.DONE: done["done"]}
            spent = {k: done[k] for k in ("done", "passed", "cost_usd")}
            return eval_view(info, counts, spent=spent, operator=operator)
        view = eval_view(
            info,
            self.store.evals.counts(eval_id, split=split),
            spent=self.store.evals.progress(eval_id, split=split),
            operator=operator,
        )
        if operator and info.status == EvalStatus.CANCELLED:
            units = self.store.exposure.units(eval_id)
            if units:
                view["holdout_budget"] = holdout_budget(units)
        return view

    def list(
        self, agent_id: str | None, cursor: str | None, limit: int, *, operator: bool = True
    ) -> JSONObject:
        page = self.store.evals.list(agent_id=agent_id, cursor=cursor, limit=limit)
        return {
            "items": [eval_view(i, operator=operator) for i in page.items],
            "next_cursor": page.next_cursor,
        }

    def cancel(self, eval_id: str) -> JSONObject:
        """Stop a running eval; each suite whose holdout cells were never claimed gets its
        holdout unit back in the same transaction (records.EvalRegistry.cancel)."""
        info = self.store.evals.get(eval_id)
        if info.imported:
            raise imported_refusal(info, "cancelled")
        cancelled, units = self.store.evals.cancel(eval_id)
        view = eval_view(cancelled)
        if units:
            view["holdout_budget"] = holdout_budget(units)
        return view

    def record(self, agent_id: str) -> JSONObject:
        """The current record, its staleness, and its score as evidence: the lower bound
        paid for every org's holdout-revealing evals of its suites (`eval_score_lower`,
        docs/integrity.md). This store's record first; without one, the record another
        issuer's imported certificate carries (an active one first), labelled with its
        issuer. Every imported record of the version is listed (`imported`)."""
        info = self.store.agents.get(agent_id)
        now = utcnow()
        record = self.store.evals.current_record_with_staleness(agent_id, info.version)
        imported = self.store.certificates.imported_of(
            agent_id, info.version, info.manifest, now=now
        )
        if record is None and imported:
            # An active one, if any: the record a mandate accepting its issuer reads.
            shown = min(imported, key=lambda i: i.status(now) != "active")
            record = shown.record
        if record is None:
            raise NotFound(
                f"{agent_id} {info.version} has no record: it has not been evaluated",
                # Not a promise of a record: an org whose holdout budget is spent gets
                # public cases only, which the plan says before anything runs.
                hint=(
                    f"holon eval {agent_id} (its plan, shown before it runs, says whether it "
                    "can write a record: not while the org's or the instance set's holdout "
                    "budget is spent)"
                ),
            )
        lower, _ = eval_score_lower(record, record.holdout_evals or {})
        live = live_view(self.store.conformance.window(agent_id), live_window_start(now))
        view = {**record.to_json(), "eval_score_lower": lower, "live": live}
        if record.canaries:
            view.update(self._live_score(record))
        if imported:
            view["imported"] = [imported_view(i, now) for i in imported]
        return view

    def _live_score(self, record: AgentRecord) -> JSONObject:
        """The record's `canaries` read again with, per capability, the canaries' pass
        rate and its interval: since the record's eval, and over the last
        CANARY_WINDOW_DAYS (the operator's: records.show). Read together, so that the
        three counts agree while canaries are being graded."""
        scored = self.store.canaries.with_window(record.agent, record.agent_version, record.eval_id)
        if not scored:  # a new eval replaced the record meanwhile: this view stays as read
            return {}
        return {
            "canaries": {cap: seen.to_json() for cap, (seen, _, _) in scored.items()},
            "live_score": {
                cap: {
                    **live_score(seen.passed or 0, seen.graded or 0),
                    "window_days": CANARY_WINDOW_DAYS,
                    "window": live_score(passed, graded),
                }
                for cap, (seen, graded, passed) in scored.items()
            },
        }


def live_view(rows: list[LiveConformance], since: str) -> JSONObject:
    """The record's `live` block: the agent's live answers and contract violations over the
    window (records._conformance), in all and by capability."""
    total = LiveConformance(
        "",
        "",
        since,
        sum(r.calls for r in rows),
        sum(r.violations for r in rows),
        sum(r.input_violations for r in rows),
        sum(r.check_failures for r in rows),
    )
    return {
        **total.to_json(),
        "capabilities": {
            r.capability: {
                k: v for k, v in r.to_json().items() if k not in ("window_days", "since")
            }
            for r in rows
        },
    }
