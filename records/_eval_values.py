"""An eval's values as the store gives them: the eval, and its cells at each boundary.

Each cell type exists for one reader (docs/glossary.md, "Cell types"): the plan
writes `CellSpec`, a claim returns `ClaimedCell`, a worker writes back a
`CellResultRow`, scoring reads `ScoredCell` and a report `ReportCell`.
`EvalCell` is the ORM row, private to records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from records._models import EvalRun
from records._rows import from_row
from records._statuses import EvalStatus
from records._types import utc_text, utc_text_or_none

__all__ = [
    "CellResultRow",
    "CellSpec",
    "ClaimedCell",
    "EvalInfo",
    "ReportCell",
    "ScoredCell",
    "Settled",
    "eval_info",
]


@dataclass(frozen=True)
class CellSpec:
    idx: int
    suite_id: str
    suite_version: int
    split: str
    case_id: str
    case_digest: str
    repetition: int
    tags: list[str]
    request_id: str


@dataclass(frozen=True)
class ClaimedCell:
    idx: int
    fence: int
    suite_id: str
    suite_version: int
    split: str
    case_id: str
    repetition: int
    request_id: str
    reclaimed: bool  # it was running under another lease before


@dataclass(frozen=True)
class CellResultRow:
    idx: int
    fence: int
    outcome_code: str
    passed: bool
    cost_usd: str
    latency_ms: float
    attempts: int
    outcome: dict[str, Any]
    output: Any
    checks: list[Any] | None


@dataclass(frozen=True, slots=True)
class ReportCell:
    """What a report reads of a cell (evals.reports._data): no lease, fence or times."""

    idx: int
    suite_id: str
    split: str
    case_id: str
    case_digest: str
    repetition: int
    tags: Any
    request_id: str
    status: str
    outcome_code: str | None
    passed: bool | None
    cost_usd: str | None
    latency_ms: float | None
    attempts: int
    outcome: Any
    output: Any
    checks: Any


@dataclass(frozen=True, slots=True)
class ScoredCell:
    """What scoring reads of a cell: no JSON column (decoding those is most of a load)."""

    idx: int
    suite_id: str
    split: str
    case_id: str
    status: str
    passed: bool | None
    outcome_code: str | None
    cost_usd: str | None
    latency_ms: float | None


@dataclass(frozen=True)
class EvalInfo:
    id: str
    agent_id: str
    agent_version: str
    plan: dict[str, Any]
    plan_digest: str
    full_plan: bool
    status: EvalStatus
    cells_total: int
    created_at: datetime
    finished_at: datetime | None
    result: dict[str, Any] | None
    # Where an imported eval came from (records._imports); None for one run here.
    origin: dict[str, Any] | None = None

    @property
    def imported(self) -> bool:
        return self.origin is not None

    def to_json(
        self,
        counts: dict[str, int] | None = None,
        *,
        spent: dict[str, Any] | None = None,
        author_record: Callable[[Any], Any] | None = None,
    ) -> dict[str, Any]:
        """Schema `entities/eval`: the eval as the API and the CLI show it, with its progress
        when `counts` (cells by status) are given, and what its done cells passed and cost
        when `spent` is (`EvalRegistry.progress`, for `evals status`).

        The operator's view, unless `author_record` is given: then what anyone else may
        read (docs/integrity.md): the summary of the public cells only, the record as
        `author_record` makes it (each holdout split as its rate and interval: the
        evals layer's rule), no plan digest (it hashes epochs); `counts` must then be
        of the public split. Asking for an author's view takes that rule, so it cannot
        be had with the operator's record by leaving it out.
        """
        from records._imports import imported_view  # it reads EvalInfo rows itself

        operator = author_record is None
        view: dict[str, Any] = {
            "id": self.id,
            "agent": self.agent_id,
            "agent_version": self.agent_version,
            "status": self.status,
            "full_plan": self.full_plan,
            "cells": self.cells_total,
            "cells_by_split": _cells_by_split(self.plan),
            "created_at": utc_text(self.created_at),
            "finished_at": utc_text_or_none(self.finished_at),
        }
        if operator:
            view["plan_digest"] = self.plan_digest
        # Run elsewhere, checked here, no record written here (docs/evals.md, "Imported evals").
        view["imported"] = (
            None if self.origin is None else imported_view(self.origin, operator=operator)
        )
        withheld = [
            {"suite": entry["id"], **entry["holdout_withheld"]}
            for entry in self.plan.get("suites", [])
            if entry.get("holdout_withheld")
        ]
        if withheld:
            view["holdout_withheld"] = withheld
        if counts is not None:
            view["progress"] = counts
            view["progress_of"] = "all" if operator else "public"
        if spent is not None:
            view["spent"] = spent
        if self.result is not None:
            record = self.result["record"]
            if author_record is None:
                view["summary"] = self.result["summary"]
                view["record"] = record
            else:
                # Evals finished before public summaries were kept show none to authors.
                view["summary"] = self.result.get("public_summary")
                view["record"] = author_record(record) if isinstance(record, dict) else record
            view["meets_thresholds"] = self.result["meets_thresholds"]
            if withheld and isinstance(record, dict):
                _without_verdict(view, record, withheld)
        return view


def _without_verdict(view: dict[str, Any], record: dict[str, Any], withheld: list[Any]) -> None:
    """A public-only eval (a suite's holdout withheld by the exposure budget) is no
    verdict: a score over public cases alone is what an author can tune to, so its view
    shows each suite's public rate and why, never an eval_score or a threshold met."""
    view["record"] = None
    view["meets_thresholds"] = None
    view["public_rates"] = {
        suite_id: suite.get("public") for suite_id, suite in record.get("suites", {}).items()
    }
    view["verdict_withheld"] = "public cases only: " + "; ".join(
        str(entry.get("message") or f"the holdout of {entry['suite']} was withheld")
        for entry in withheld
    )


def _cells_by_split(plan: dict[str, Any]) -> dict[str, int]:
    out = {"public": 0, "holdout": 0}
    for entry in plan.get("suites", []):
        for split in out:
            out[split] += int(entry["cases"][split]) * int(entry["repetitions"])
    return out


@dataclass(frozen=True)
class Settled:
    """What one group commit did: the idxs recorded, the cells claimed, the eval's status."""

    recorded: list[int]
    claimed: list[ClaimedCell]
    status: EvalStatus


def eval_info(row: EvalRun) -> EvalInfo:
    return from_row(EvalInfo, row, status=EvalStatus(row.status))
