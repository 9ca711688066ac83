"""The case explorer's reads (evals.reports._explore) over an imported eval, whose cells
are the report it was imported from rather than rows of the cell table: the same pages,
cells and changes as the eval it came from, an author's of the public cells alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals import import_report
from evals.reports import (
    NO_CELL,
    CellQuery,
    build_report,
    changed_cells,
    explore,
    explored_cell,
    render_json,
)
from records import Store
from schema.errors import NotFound
from tests.evals.reports._setup import run_eval, setup


def test_an_imported_eval_explores_as_the_eval_it_came_from(
    sqlite_store: Store, tmp_path: Path
) -> None:
    store = sqlite_store
    setup(store, tmp_path)
    original = run_eval(store, tmp_path / "home")
    report = render_json(build_report(store, original, audience="operator")).encode()
    imported = import_report(
        store, report, home=tmp_path / "home", source="report.json", file="r.json"
    ).id

    def rows(eval_id: str, operator: bool, **query: str) -> list[tuple[object, ...]]:
        page = explore(store, eval_id, CellQuery(**query), operator=operator)
        return [(r["idx"], r["case_id"], r["split"], r["status"]) for r in page["rows"]]

    for operator in (True, False):
        assert rows(imported, operator) == rows(original, operator)
        assert rows(imported, operator, outcome="failures") == rows(
            original, operator, outcome="failures"
        )
    splits = {split for _, _, split, _ in rows(imported, True)}
    assert splits == {"public", "holdout"}  # the test can fail: the operator reads both
    assert {split for _, _, split, _ in rows(imported, False)} == {"public"}
    held = next(idx for idx, _, split, _ in rows(imported, True) if split == "holdout")
    assert isinstance(held, int)
    shown = explored_cell(store, imported, held, CellQuery(), operator=True)
    assert shown["split"] == "holdout" and shown["checks"] is not None
    with pytest.raises(NotFound) as hidden:
        explored_cell(store, imported, held, CellQuery(), operator=False)
    assert str(hidden.value) == NO_CELL.format(eval_id=imported)
    same = changed_cells(store, original, imported, operator=True)
    assert same == {"n": 0, "cells": []}
