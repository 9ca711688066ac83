"""One pass over an eval's cells: what a comparison of it states, and of the cells themselves
only what pairing needs (docs/evals.md, "Reports").

As the cells are read, a page at a time (`_data.stored_cells`), each is
counted into its case's tally (`CaseTally`: planned, recorded, passed), into
its suite's cost and latency totals (`CellTotals`: two floats a cell) and its
suite split's check tallies (`CheckTallies`), those two over the cells the
audience is shown; and its place, idx, repetition, label (split, case id,
tags) and state (status, outcome, passed) join its case digest's
`CellRuns`, which hold a case's cells, written one after another in
repetition order, as the first one's numbers and a byte a cell. So what is
kept grows with the cases and checks of a plan, and with its cells by those
two floats and a byte alone.

Check tallies are counted in case order, as a report's are (`_tally`): a
store whose cells of a case do not come together in repetition order
(written by hand) has them counted again from its cells grouped by case in
memory: the same comparison, at the cost of holding its cells.
"""

from __future__ import annotations

from collections.abc import Iterator

from evals.reports._aggregate import CaseTally, CellTotals, CheckTallies, case_key, tally_cases
from evals.reports._compare_pairs import CellRuns, Interned, Pairing, Run
from evals.reports._data import AUTHOR, CellData, EvalSource, SuiteData
from records import CellStatus, EvalStatus

__all__ = ["CompareTally"]

CaseKey = tuple[str, str, str]  # suite id, split, case id


class CompareTally:
    """What a comparison reads of one eval for an audience: every case's tally (`cases`,
    in the order of its first cell), and over the cells the audience is shown (an
    author's: the public ones) each planned suite's totals (`spend`) and each suite
    split's check tallies (`checks`); and `pairing`, every cell of the plan's suites."""

    def __init__(self, source: EvalSource, *, operator: bool) -> None:
        self.source = source
        self.operator = operator
        self.cases: dict[CaseKey, CaseTally] = {}
        self.spend: dict[str, CellTotals] = {}
        self.checks: dict[tuple[str, str], CheckTallies] = {}
        self.all_done = True
        # The plan's first suite of each id is the one compared (`suite`).
        self._suites: dict[str, SuiteData] = {}
        for suite in source.suites:
            self._suites.setdefault(suite.id, suite)
        self._texts: dict[str, str] = {}
        self._labels = Interned()
        self._states = Interned()
        self._runs: dict[str, dict[str, CellRuns]] = {}
        if not self._count(source.read(None)):
            self._regroup()
        self.pairing = Pairing(self._runs, self._labels.values, self._states.values)

    def shows(self, split: str) -> bool:
        return self.operator or split in AUTHOR

    def suite(self, suite_id: str) -> SuiteData | None:
        return self._suites.get(suite_id)

    @property
    def complete(self) -> bool:
        """Done with every cell recorded: only then may an author learn of its holdout."""
        return self.source.info.status == EvalStatus.DONE and self.all_done

    def _count(self, cells: Iterator[CellData]) -> bool:
        """Count every cell; whether each case's cells came together, in repetition order
        (and idx order within a repetition: the order a case's cells are counted in)."""
        in_order = True
        last: CaseKey | None = None
        place = (0, 0)  # the last cell's repetition and idx
        for pos, cell in enumerate(cells):
            key = case_key(cell)
            case = self.cases.get(key)
            if case is None:
                # Each row's texts are its own: a case keeps the one suite id and split.
                suite_id = self._texts.setdefault(cell.suite_id, cell.suite_id)
                split = self._texts.setdefault(cell.split, cell.split)
                key = (suite_id, split, cell.case_id)
                case = CaseTally(suite_id, split, cell.case_id, cell.case_digest, cell.tags)
                self.cases[key] = case
            elif key != last or (cell.repetition, cell.idx) < place:
                in_order = False
            last, place = key, (cell.repetition, cell.idx)
            case.add(cell)
            self.all_done = self.all_done and cell.status == CellStatus.DONE
            if cell.suite_id not in self._suites:
                continue  # of no planned suite: no comparison reads it
            label = self._labels.number((case.split, cell.case_id, cell.tags))
            state = self._states.number((cell.status, cell.outcome_code, cell.passed))
            by_digest = self._runs.setdefault(cell.suite_id, {})
            runs = by_digest.get(cell.case_digest)
            if runs is None:
                runs = by_digest[cell.case_digest] = CellRuns()
            runs.add(Run(pos, cell.idx, cell.repetition, label, state))
            if not self.shows(cell.split):
                continue
            totals = self.spend.get(cell.suite_id)
            if totals is None:
                totals = self.spend[cell.suite_id] = CellTotals()
            totals.add(cell)
            if in_order:
                self._check(cell)
        return in_order

    def _check(self, cell: CellData) -> None:
        key = (cell.suite_id, cell.split)
        tallies = self.checks.get(key)
        if tallies is None:
            tallies = self.checks[key] = CheckTallies(self._suites[cell.suite_id])
        tallies.add(cell)

    def _regroup(self) -> None:
        """The check tallies counted again, from the cells grouped by case in memory."""
        self.checks = {}
        for case in tally_cases(self.source.read(None)):
            if case.suite_id in self._suites and self.shows(case.split):
                for cell in case.cells:
                    self._check(cell)
