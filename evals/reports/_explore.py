"""The case explorer (docs/console.md, "Eval"): an eval's cells a page at a time under
filters, one cell whole, and the cells that changed between two evals.

Pages are read from the store by keyset on the cell's index, which is plan order (suite,
case, repetition: evals._plan), never the whole eval: a page costs its own rows.

Who reads what: the cells of `shown_splits` alone (evals._integrity), the rule every
author view is built by, applied in the store's query. So an author's page, count, filter
and search never touch a holdout cell, and a holdout cell's index asked for by an author
is the same NotFound as an index that does not exist.

The filters but the split run in Python over a bounded scan (at most `SCAN` cells, and at
most `SCAN_CHARS` characters of outputs when searching, a request; a page that stops there
says where, and its link goes on from there), not in SQL: tags and check results are JSON
columns, which SQLite and PostgreSQL query differently; a case's input is not in the cell
table but in the suite's files; and a LIKE over an output's stored JSON would match its
escapes (`\\u00e9`, `\\"`) rather than the text the page shows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from evals._integrity import shown_splits
from evals.reports._aggregate import milliseconds, raised
from evals.reports._attempts import attempt_json
from evals.reports._compare import _pairs
from evals.reports._data import CellData, _case_inputs, _cell, _suite_document, load_eval
from evals.reports._model import _check
from evals.reports._values import bounded
from records import EvalInfo, Store
from schema.errors import NotFound, UsageError

__all__ = ["NO_CELL", "CellQuery", "changed_cells", "explore", "explored_cell", "verdict"]

PAGE = 100  # cells a page shows
SCAN = 5000  # cells one request reads at most while filtering
SCAN_CHARS = 64_000_000  # characters of outputs one search reads at most
BATCH = 200  # cells read from the store at once while filtering
QUERY_LIMIT = 200  # characters of a filter's value
OUTCOMES = {"failures": "fail", "errors": "error", "passes": "pass"}
FAILED_SHOWN = 5  # failed checks named in a row of the table
CHANGED_SHOWN = 200  # changed cells listed by a comparison
# One answer for a cell the reader may not see and for one that is not there: naming the
# index asked for would be the only difference, so it is not named.
NO_CELL = "no such cell in eval {eval_id}"


def verdict(cell: CellData) -> str:
    """A cell as the explorer says it: `pass`, `fail` (graded, not passed), `error` (no
    graded answer: the agent's call did not end `ok`, or a check raised), or the cell's
    own status while it is still `pending` or `running`."""
    if not cell.done:
        return str(cell.status)
    if not cell.graded or any(raised(r) for r in cell.checks or ()):
        return "error"
    return "pass" if cell.passed else "fail"


def _failed(cell: CellData) -> list[str]:
    return [str(r.get("name")) for r in cell.checks or () if r.get("passed") is not True]


@dataclass(frozen=True)
class CellQuery:
    """The explorer's filters (None: any); each set one must hold."""

    outcome: str | None = None  # failures, errors or passes
    tag: str | None = None  # the case has this tag
    check: str | None = None  # this check did not pass on the cell
    split: str | None = None  # one of the splits the reader may see
    text: str | None = None  # in the case id, the case's input or the output (any case)

    @classmethod
    def read(cls, params: Mapping[str, str], *, operator: bool) -> CellQuery:
        """The filters of a query string, checked; UsageError names a bad one."""
        values: dict[str, str | None] = {}
        for f in fields(cls):
            value = params.get(f.name, "").strip()
            if len(value) > QUERY_LIMIT:
                raise UsageError(f"{f.name} is at most {QUERY_LIMIT} characters")
            values[f.name] = value or None
        if values["outcome"] is not None and values["outcome"] not in OUTCOMES:
            raise UsageError(f"outcome must be one of {', '.join(OUTCOMES)}")
        splits = shown_splits(operator)
        if values["split"] is not None and values["split"] not in splits:
            raise UsageError(f"split must be one of {', '.join(splits)}")
        return cls(**values)

    def params(self) -> dict[str, str]:
        """The filters that are set, as a query string carries them."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name)}

    @property
    def scans(self) -> bool:
        """Whether a filter runs in Python (the split is the store's)."""
        return any((self.outcome, self.tag, self.check, self.text))

    def matches(
        self, cell: CellData, inputs: Mapping[tuple[str, str], Any], output: str = ""
    ) -> bool:
        """Whether the cell passes every filter; `output`: its output's text, searched."""
        if self.outcome is not None and verdict(cell) != OUTCOMES[self.outcome]:
            return False
        if self.tag is not None and self.tag not in cell.tags:
            return False
        if self.check is not None and self.check not in _failed(cell):
            return False
        if self.text is not None:
            needle = self.text.casefold()
            key = (cell.split, cell.case_id)
            haystacks = (cell.case_id, _text(inputs.get(key)), output)
            return any(needle in h.casefold() for h in haystacks)
        return True


def _text(value: Any) -> str:
    return "" if value is None else json.dumps(value, ensure_ascii=False, default=str)


class _Cells:
    """An eval's cells that `splits` admits, read in index order a batch at a time: from
    the store, or an imported eval's from the report it was imported from."""

    def __init__(self, store: Store, eval_id: str, operator: bool, only: str | None = None) -> None:
        self.store, self.eval_id = store, eval_id
        self.shown = shown_splits(operator)
        # The split filter narrows what the reader may see, never widens it.
        self.splits = tuple(s for s in self.shown if only in (None, s))
        self.info: EvalInfo = store.evals.get(eval_id)  # NotFound for an unknown eval
        self._imported: list[CellData] | None = None
        if self.info.imported:
            data = load_eval(store, eval_id)
            self._imported = sorted(
                (c for c in data.cells if c.split in self.splits), key=lambda c: c.idx
            )

    def batch(
        self, *, after: int | None = None, before: int | None = None, limit: int, output: bool
    ) -> list[CellData]:
        """At most `limit` cells after `after` in order, or before `before` nearest first."""
        if self._imported is not None:
            if before is not None:
                return [c for c in reversed(self._imported) if c.idx < before][:limit]
            start = -1 if after is None else after
            return [c for c in self._imported if c.idx > start][:limit]
        rows = self.store.evals.report_cells_between(
            self.eval_id, splits=self.splits, after=after, before=before, limit=limit, output=output
        )
        return [_cell(row) for row in rows]

    def inputs(self, suite_id: str | None = None) -> dict[tuple[str, str], Any]:
        """Each case's input by (split, case id), from the case files of the installed
        suites of the plan (or of `suite_id` alone); a suite no longer installed has none."""
        found: dict[tuple[str, str], Any] = {}
        for entry in self.info.plan.get("suites", []):
            if not isinstance(entry, dict) or suite_id not in (None, entry.get("id")):
                continue
            try:
                files = self.store.suites.files(str(entry["id"]), int(entry["version"]))
            except (KeyError, TypeError, ValueError, NotFound):
                continue
            document = _suite_document(files)
            known = {} if document is None else _case_inputs(files, document)
            found.update({k: v for k, v in known.items() if k[0] in self.splits})
        return found


def _row(cell: CellData) -> dict[str, Any]:
    failed = _failed(cell)
    more = len(failed) - FAILED_SHOWN
    return {
        "idx": cell.idx,
        "suite": cell.suite_id,
        "case_id": cell.case_id,
        "split": cell.split,
        "repetition": cell.repetition,
        "status": verdict(cell),
        "outcome": cell.outcome_code,
        "latency_ms": None if cell.latency_ms is None else milliseconds(cell.latency_ms),
        "cost_usd": None if cell.cost_usd is None else str(cell.cost_usd),
        "failed": failed[:FAILED_SHOWN] + ([f"… and {more} more"] if more > 0 else []),
        "tags": list(cell.tags),
    }


def _scan(
    cells: _Cells,
    query: CellQuery,
    *,
    after: int | None = None,
    before: int | None = None,
    wanted: int,
) -> tuple[list[CellData], int | None, bool]:
    """Up to `wanted` matching cells from `after` onwards (or back from `before`), the
    index of the last cell read, and whether the scan stopped at its bound."""
    found: list[CellData] = []
    inputs = cells.inputs() if query.text else {}
    last, scanned, chars = None, 0, 0
    size = BATCH if query.scans else wanted
    while True:
        batch = cells.batch(
            after=last if before is None and last is not None else after,
            before=last if before is not None and last is not None else before,
            limit=size,
            output=query.text is not None,
        )
        for cell in batch:
            last, scanned = cell.idx, scanned + 1
            output = "" if query.text is None else _text(cell.output)
            chars += len(output)
            if query.matches(cell, inputs, output):
                found.append(cell)
                if len(found) == wanted:
                    return found, last, False
            if scanned >= SCAN or chars >= SCAN_CHARS:
                return found, last, True
        if len(batch) < size:
            return found, last, False


def explore(
    store: Store,
    eval_id: str,
    query: CellQuery,
    *,
    operator: bool,
    after: int | None = None,
    limit: int = PAGE,
) -> dict[str, Any]:
    """One page of the eval's cells under `query`: its rows, and where the next page
    starts (`next_after`, None at the end); `stopped_at` when the scan hit its bound."""
    cells = _Cells(store, eval_id, operator, query.split)
    found, last, bounded_scan = _scan(cells, query, after=after, wanted=limit + 1)
    rows = [_row(c) for c in found[:limit]]
    next_after = None
    if len(found) > limit:
        next_after = found[limit - 1].idx
    elif bounded_scan:
        next_after = last
    return {
        "rows": rows,
        "next_after": next_after,
        "stopped_at": last if bounded_scan and len(found) <= limit else None,
        "filters": query.params(),
        "splits": list(cells.shown),
        "outcomes": list(OUTCOMES),
        "limit": limit,
    }


OUTPUT_SHOWN = 20_000  # characters of an output's indented JSON on a cell's page


def _pretty(value: Any, limit: int = OUTPUT_SHOWN) -> dict[str, Any] | None:
    """A JSON value as indented text cut at `limit` characters, with how much was cut."""
    if value is None:
        return None
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return {"text": text[:limit], "more": max(len(text) - limit, 0)}


def explored_cell(
    store: Store, eval_id: str, idx: int, query: CellQuery, *, operator: bool
) -> dict[str, Any]:
    """Everything about one cell, with the cells before and after it under `query`.
    NotFound, one message, for an index the reader may not see or that is not there."""
    cells = _Cells(store, eval_id, operator)
    found = cells.batch(after=idx - 1, limit=1, output=True)
    if not found or found[0].idx != idx:
        raise NotFound(NO_CELL.format(eval_id=eval_id))
    cell = found[0]
    inputs = cells.inputs(cell.suite_id)
    within = cells if query.split is None else _Cells(store, eval_id, operator, query.split)
    earlier, _, _ = _scan(within, query, before=idx, wanted=1)
    later, _, _ = _scan(within, query, after=idx, wanted=1)
    return {
        **_row(cell),
        "eval_id": eval_id,
        "agent": cells.info.agent_id,
        "request_id": cell.request_id,
        "case_digest": cell.case_digest,
        "input": _pretty(inputs.get((cell.split, cell.case_id))),
        "output": _pretty(cell.output) if cell.done else None,
        "metadata": _pretty(bounded(cell.metadata)) if cell.metadata is not None else None,
        "checks": None if cell.checks is None else [_check(r) for r in cell.checks],
        "error": cell.error,
        "http_status": cell.http_status,
        "attempts": cell.attempts,
        "attempt_log": [attempt_json(a, milliseconds) for a in cell.attempt_log],
        "grade_ms": None if cell.grade_ms is None else milliseconds(cell.grade_ms),
        "input_tokens": cell.input_tokens,
        "output_tokens": cell.output_tokens,
        "prev": earlier[0].idx if earlier else None,
        "next": later[0].idx if later else None,
        "filters": query.params(),
    }


def changed_cells(
    store: Store, base_id: str, candidate_id: str, *, operator: bool
) -> dict[str, Any]:
    """The paired cells of two evals (paired as a comparison pairs them) whose verdict
    differs, each with both indexes; an author's from the public cells alone."""
    sides = [_Cells(store, eval_id, operator) for eval_id in (base_id, candidate_id)]
    base, candidate = (_all(side) for side in sides)
    pairs, _, _ = _pairs(base, candidate)
    changed = [p for p in pairs if verdict(p.base) != verdict(p.candidate)]
    changed.sort(key=lambda p: p.base.idx)
    return {
        "n": len(changed),
        "cells": [
            {
                "suite": p.base.suite_id,
                "split": p.base.split,
                "case_id": p.base.case_id,
                "repetition": p.base.repetition,
                "base": {"idx": p.base.idx, "status": verdict(p.base)},
                "candidate": {"idx": p.candidate.idx, "status": verdict(p.candidate)},
            }
            for p in changed[:CHANGED_SHOWN]
        ],
    }


def _all(cells: _Cells) -> Sequence[CellData]:
    out: list[CellData] = []
    while True:
        batch = cells.batch(after=out[-1].idx if out else None, limit=5000, output=False)
        out += batch
        if len(batch) < 5000:
            return out
