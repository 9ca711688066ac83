"""Imported evals: an eval run on another store, kept as the report it was checked from.

An imported eval is a row of `evals` (so it lists, reports and compares
with the rest) with `origin` set, `status` done, no cells, and its report
in `imported_reports`. Importing writes nothing else: no agent record, no
exposure spend, no epoch count, so no mandate ever reads it
(`EvalRegistry.current_record` reads `agent_records` only). Checking the
report is `evals._import`'s; this module only keeps what it was given.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from records._eval_values import EvalInfo, eval_info
from records._models import EvalRun, ImportedReport
from records._registry import Registry
from records._rows import to_row
from records._statuses import EvalStatus
from schema.errors import NotFound

__all__ = ["ImportRegistry", "NewImport", "imported_view"]


@dataclass(frozen=True)
class NewImport:
    """An imported eval as its checked report describes it."""

    eval_id: str  # this store's id for it (ev_ + ULID)
    agent_id: str
    agent_version: str
    plan: dict[str, Any]
    plan_digest: str
    full_plan: bool
    cells_total: int
    created_at: datetime
    finished_at: datetime | None
    result: dict[str, Any] | None
    origin: dict[str, Any]
    report: dict[str, Any]


class ImportRegistry(Registry):
    def create(self, new: NewImport) -> EvalInfo:
        """The eval row and its report, in one transaction; nothing else is written."""
        with self._store.write() as session:
            run = to_row(EvalRun, new, id=new.eval_id, status=EvalStatus.DONE)
            session.add(run)
            session.flush()
            session.add(ImportedReport(eval_id=new.eval_id, report=new.report))
            return eval_info(run)

    def report(self, eval_id: str) -> dict[str, Any]:
        """The report an imported eval was checked from; NotFound for any other eval."""
        with self._store.read() as session:
            row = session.get(ImportedReport, eval_id)
            if row is None:
                raise NotFound(f"no imported eval {eval_id!r}", details={"eval": eval_id})
            return row.report


def imported_view(origin: dict[str, Any], *, operator: bool = True) -> dict[str, Any]:
    """An imported eval's label in every view: where its report came from, when it was
    imported and by whom (the operator's to know), and what could be checked of it here."""
    source = dict(origin.get("origin") or {})
    if not operator:
        # The other host's Python and platform are its operator's to know, as in its report.
        made = source.get("generated_by")
        holon = made.get("holon") if isinstance(made, dict) else None
        source["generated_by"] = {"holon": holon, "python": None, "platform": None}
    return {
        "origin": source,
        "imported_at": origin.get("imported_at"),
        "imported_by": origin.get("imported_by") if operator else None,
        "checked": origin.get("checked"),
    }
