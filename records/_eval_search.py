"""Evals found by what they are of and when they ran: the console's list of evals.

Newest first, as `EvalRegistry.list`, under filters: the agent or a whole org's
agents, the status, whether it ran here or was imported, when it was started
(SQL), and the suites and capabilities of its plan (read from the plan as the
rows go by, so a page reads at most `SCAN` rows: a rare suite yields short
pages, each with a cursor to go on, never one unbounded read).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Select, select

from records._eval_values import EvalInfo, eval_info
from records._models import EvalRun
from records._pages import Page, check_limit, decode_cursor, encode_cursor
from records._registry import Registry

__all__ = ["EvalFilter", "EvalSearch"]

SCAN = 5000  # eval rows one page reads at most
BATCH = 200


@dataclass(frozen=True)
class EvalFilter:
    """Every field that is set must hold (None: any)."""

    org: str | None = None  # evals of this org's agents only ("org/…")
    agent: str | None = None
    status: str | None = None
    suite: str | None = None
    capability: str | None = None
    origin: Literal["here", "imported"] | None = None  # run on this store, or imported
    since: datetime | None = None  # started at or after
    until: datetime | None = None  # started before

    def _where(self, query: Select[Any]) -> Select[Any]:
        if self.org is not None:
            query = query.where(EvalRun.agent_id.startswith(self.org + "/", autoescape=True))
        if self.agent is not None:
            query = query.where(EvalRun.agent_id == self.agent)
        if self.status is not None:
            query = query.where(EvalRun.status == self.status)
        if self.origin == "here":
            query = query.where(EvalRun.origin.is_(None))
        elif self.origin == "imported":
            query = query.where(EvalRun.origin.is_not(None))
        if self.since is not None:
            query = query.where(EvalRun.created_at >= self.since)
        if self.until is not None:
            query = query.where(EvalRun.created_at < self.until)
        return query

    def planned(self, plan: dict[str, Any]) -> bool:
        """The plan has a suite of the filter's id and capability (both, when both set)."""
        if self.suite is None and self.capability is None:
            return True
        for entry in plan.get("suites") or []:
            if not isinstance(entry, dict):
                continue
            if self.suite is not None and entry.get("id") != self.suite:
                continue
            if self.capability is not None and entry.get("capability") != self.capability:
                continue
            return True
        return False


class EvalSearch(Registry):
    """The search, a part of `EvalRegistry` (store.evals)."""

    def search(
        self, where: EvalFilter, *, cursor: str | None = None, limit: int = 50, scan: int = SCAN
    ) -> Page[EvalInfo]:
        """Evals matching `where`, newest first (ids are time-ordered ULIDs)."""
        check_limit(limit)
        before = decode_cursor(cursor)
        found: list[EvalInfo] = []
        read = 0
        with self._store.read() as session:
            while True:
                query = where._where(select(EvalRun)).order_by(EvalRun.id.desc())
                if before is not None:
                    query = query.where(EvalRun.id < before)
                rows: list[EvalRun] = list(session.scalars(query.limit(BATCH)))
                for row in rows:
                    read += 1
                    before = row.id
                    if where.planned(row.plan or {}):
                        found.append(eval_info(row))
                        if len(found) > limit:
                            last = found[limit - 1].id
                            return Page(found[:limit], encode_cursor(last))
                    if read >= scan:
                        # Bounded: the next page goes on from the last row read.
                        return Page(found, encode_cursor(row.id))
                if len(rows) < BATCH:
                    return Page(found, None)
