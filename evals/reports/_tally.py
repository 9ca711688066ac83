"""One pass over an eval's cells: what its report counts, and nothing of the cells themselves.

A report shows every cell (its case rows), but what it states beside them
(rates, check and tag rows, outcomes, latency, cost) is counted here as the
cells are read, a page at a time (`_data.stored_cells`): per case, per check
and per group of cells, so what is kept grows with the cases and checks of a
plan, not with its repetitions, and the cells are read again, a case at a
time, only when the case rows are written (`case_cells`).

The plan writes a case's cells one after another in repetition order, and
that order is what the report's case rows and check rows follow. A store
that holds them otherwise (written by hand) is read as before, its cells
grouped by case in memory: the same report, at the old cost.
"""

from __future__ import annotations

from collections.abc import Iterator

from evals.reports._aggregate import CaseTally, CellTotals, CheckTallies, case_key, tally_cases
from evals.reports._data import CellData, EvalSource
from records import CellStatus

__all__ = ["ReportTally"]

CaseKey = tuple[str, str, str]  # suite id, split, case id


class ReportTally:
    """The counts of one eval's report for an audience: `cases` (every case of every
    split, in the order of its first cell), and over the cells the audience is shown
    (an author's: the public ones) the totals of the eval (`summary`), of each suite
    (`suites`) and suite split (`splits`), and the check tallies of each planned suite
    and split (`checks`, by the suite's position in the plan)."""

    def __init__(self, source: EvalSource, *, operator: bool) -> None:
        self.source = source
        self.operator = operator
        self.cases: dict[CaseKey, CaseTally] = {}
        self.summary = CellTotals()
        self.suites: dict[str, CellTotals] = {}
        self.splits: dict[tuple[str, str], CellTotals] = {}
        self.checks: dict[tuple[int, str], CheckTallies] = {}
        self.all_done = True
        # The cases with their cells, when the store did not hold them case by case.
        self._grouped: list[CaseTally] | None = None
        self._positions: dict[str, list[int]] = {}
        for position, suite in enumerate(source.suites):
            self._positions.setdefault(suite.id, []).append(position)
        in_order = self._count(source.read(None))
        if not in_order:
            self._regroup()

    def shows(self, split: str) -> bool:
        return self.operator or split == "public"

    def _count(self, cells: Iterator[CellData]) -> bool:
        """Count every cell; whether each case's cells came together, in repetition order."""
        in_order = True
        last: CaseKey | None = None
        repetition = 0
        for cell in cells:
            key = case_key(cell)
            case = self.cases.get(key)
            if case is None:
                case = self.cases[key] = CaseTally.first(cell)
            elif key != last or cell.repetition < repetition:
                in_order = False
            last, repetition = key, cell.repetition
            case.add(cell)
            self.all_done = self.all_done and cell.status == CellStatus.DONE
            if not self.shows(cell.split):
                continue
            self.summary.add(cell)
            self.suites.setdefault(cell.suite_id, CellTotals()).add(cell)
            self.splits.setdefault((cell.suite_id, cell.split), CellTotals()).add(cell)
            if in_order:
                self._check(cell)
        return in_order

    def _check(self, cell: CellData) -> None:
        for position in self._positions.get(cell.suite_id, ()):
            key = (position, cell.split)
            tallies = self.checks.get(key)
            if tallies is None:
                tallies = self.checks[key] = CheckTallies(self.source.suites[position])
            tallies.add(cell)

    def _regroup(self) -> None:
        """The cells grouped by case in memory, and the check tallies counted in that order."""
        self._grouped = tally_cases(self.source.read(None))
        self.cases = {(c.suite_id, c.split, c.case_id): c for c in self._grouped}
        self.checks = {}
        for case in self._grouped:
            if self.shows(case.split):
                for cell in case.cells:
                    self._check(cell)

    def case_cells(self, suite_id: str) -> Iterator[tuple[CaseTally, list[CellData]]]:
        """The suite's cases the audience is shown, each with its cells in order, read anew
        (a case's cells at a time, unless the store held them otherwise)."""
        if self._grouped is not None:
            for case in self._grouped:
                if case.suite_id == suite_id and self.shows(case.split):
                    yield case, case.cells
            return
        run: list[CellData] = []
        last: CaseKey | None = None
        for cell in self.source.read(suite_id):
            if not self.shows(cell.split):
                continue
            key = case_key(cell)
            if key != last and run and last is not None:
                yield self.cases[last], run
                run = []
            last = key
            run.append(cell)
        if run and last is not None:
            yield self.cases[last], run
