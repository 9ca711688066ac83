"""An eval's values as the store gives them: the eval, and its cells at each boundary.

Each cell type exists for one reader (docs/glossary.md, "Cell types"): the plan
writes `CellSpec`, a claim returns `ClaimedCell`, a worker writes back a
`CellResultRow`, scoring reads `ScoredCell` and a report `ReportCell`.
`EvalCell` is the ORM row, private to records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from records._models import EvalRun
from records._statuses import EvalStatus

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


@dataclass(frozen=True)
class Settled:
    """What one group commit did: the idxs recorded, the cells claimed, the eval's status."""

    recorded: list[int]
    claimed: list[ClaimedCell]
    status: EvalStatus


def eval_info(row: EvalRun) -> EvalInfo:
    return EvalInfo(
        row.id,
        row.agent_id,
        row.agent_version,
        row.plan,
        row.plan_digest,
        row.full_plan,
        EvalStatus(row.status),
        row.cells_total,
        row.created_at,
        row.finished_at,
        row.result,
        row.origin,
    )
