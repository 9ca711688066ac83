"""Pairing two evals' cells (docs/evals.md, "Reports") from what each kept of them: per case
digest, each cell's place, repetition and state, runs of numbers rather than cells.

Cells pair on (suite id, case digest, repetition), and only recorded ones:
of a candidate's cells of one key the first recorded one is the partner, and
a base cell takes the partner of its key as it is read, recorded or not (a
base cell not recorded leaves its partner unpaired). So pairing is one
digest at a time, and a case's paired runs are counted as they pair: no
pair is held, and the unpaired cells are listed (`Lone`), never dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

from evals._stats import rounded
from evals.reports._aggregate import rate
from records import CellStatus

__all__ = [
    "CellRuns",
    "Change",
    "Interned",
    "Lone",
    "Pairing",
    "Run",
    "pair_suite",
    "signed_rate",
]

Label = tuple[str, str, tuple[str, ...]]  # a cell's split, case id and tags
State = tuple[str, str | None, bool]  # its status, outcome code and whether it passed


class Run(NamedTuple):
    """A cell as pairing reads it: its place in the eval's order, idx, repetition, and
    the numbers of its label and state (`Pairing`)."""

    pos: int
    idx: int
    rep: int
    label: int
    state: int


def signed_rate(value: Fraction) -> Decimal:
    """A difference of rates to 4 places; a difference that rounds to zero is 0, not -0."""
    shown = rounded(value)
    return shown if shown else abs(shown)


class Interned:
    """Each distinct value once, named by its number: a cell's label or state is one of a
    few per case, held once."""

    def __init__(self) -> None:
        self._numbers: dict[Any, int] = {}
        self.values: list[Any] = []

    def number(self, value: Any) -> int:
        found = self._numbers.get(value)
        if found is None:
            found = self._numbers[value] = len(self.values)
            self.values.append(value)
        return found


class CellRuns:
    """The cells of one case digest of one suite, in the order they were read: each one's
    place in the eval's order (`pos`), idx, repetition, label and state (`Run`).

    Cells that come one after another, as a case's do (place, idx and repetition each
    one on from the last, one label), are held as the first one's numbers and a byte a
    cell for its state; columns of numbers once they do not (a store written by hand).
    """

    __slots__ = ("_columns", "_first", "_states")

    def __init__(self) -> None:
        self._first: Run | None = None
        self._states = bytearray()
        self._columns: tuple[list[int], ...] | None = None

    def add(self, run: Run) -> None:
        if self._columns is None:
            if self._first is None:
                self._first = run
            if run == self._next(len(self._states), run.state) and run.state < 256:
                self._states.append(run.state)
                return
            self._columns = tuple(list(column) for column in zip(*self, strict=True)) or tuple(
                [] for _ in Run._fields
            )
        for column, value in zip(self._columns, run, strict=True):
            column.append(value)

    def _next(self, i: int, state: int) -> Run:
        assert self._first is not None
        pos, idx, rep, label, _ = self._first
        return Run(pos + i, idx + i, rep + i, label, state)

    def __len__(self) -> int:
        return len(self._states) if self._columns is None else len(self._columns[0])

    def __iter__(self) -> Iterator[Run]:
        for i in range(len(self)):
            if self._columns is None:
                yield self._next(i, self._states[i])
            else:
                yield Run(*(column[i] for column in self._columns))


@dataclass(frozen=True)
class Pairing:
    """What one eval kept to pair its cells: its `CellRuns` by suite and case digest, and
    the labels and states they number."""

    runs: dict[str, dict[str, CellRuns]]
    labels: list[Label]
    states: list[State]


@dataclass(frozen=True, slots=True)
class Lone:
    """An unpaired cell, as the comparison lists it; `order` sorts the list."""

    order: int
    split: str
    case_id: str
    case_digest: str
    repetition: int
    status: str
    outcome_code: str | None
    passed: bool

    @property
    def done(self) -> bool:
        return self.status == CellStatus.DONE


def _cells(
    pairing: Pairing | None, suite_id: str, digest: str, keep: Callable[[str], bool]
) -> Iterator[tuple[Run, Label, State]]:
    runs = None if pairing is None else pairing.runs.get(suite_id, {}).get(digest)
    if runs is None or pairing is None:
        return
    for run in runs:
        label = pairing.labels[run.label]
        if keep(label[0]):
            yield run, label, pairing.states[run.state]


def _lone(cell: tuple[Run, Label, State], digest: str, order: int) -> Lone:
    run, (split, case_id, _), (status, outcome, passed) = cell
    return Lone(order, split, case_id, digest, run.rep, status, outcome, passed)


def _done(state: State) -> bool:
    return state[0] == CellStatus.DONE


@dataclass(slots=True)
class Change:
    """A paired case (its split and digest) as it pairs: how many runs paired and passed on
    each side; its first pair's (in the base's idx order) cells name it."""

    digest: str
    first: int  # the base idx of its first pair
    base: Label
    candidate: Label
    runs: int = 0
    base_passed: int = 0
    candidate_passed: int = 0

    @property
    def split(self) -> str:
        return self.base[0]

    @property
    def tags(self) -> list[str]:
        return sorted({*self.base[2], *self.candidate[2]})

    @property
    def drop(self) -> Fraction:
        """The base's paired-run score less the candidate's."""
        return Fraction(self.base_passed - self.candidate_passed, self.runs)

    @property
    def critical(self) -> bool:
        return "critical" in self.tags

    def view(self) -> dict[str, Any]:
        base_score = Fraction(self.base_passed, self.runs)
        candidate_score = Fraction(self.candidate_passed, self.runs)
        tags = self.tags
        return {
            "split": self.split,
            "case_id": self.base[1],
            "candidate_case_id": self.candidate[1],
            "case_digest": self.digest,
            "tags": tags,
            "critical": "critical" in tags,
            "runs": self.runs,
            "base": {"passed": self.base_passed, "score": rate(base_score)},
            "candidate": {"passed": self.candidate_passed, "score": rate(candidate_score)},
            "delta": signed_rate(candidate_score - base_score),
        }


def pair_suite(
    suite_id: str, base: Pairing | None, candidate: Pairing | None, keep: Callable[[str], bool]
) -> tuple[list[Change], list[Lone], list[Lone]]:
    """The suite's paired cases (by split and case digest, in the base's order), and each
    side's unpaired cells (the base's in its order, the candidate's by idx), of the cells
    whose split `keep`s."""
    digests = dict.fromkeys(
        [
            *(base.runs.get(suite_id, {}) if base else {}),
            *(candidate.runs.get(suite_id, {}) if candidate else {}),
        ]
    )
    changes: list[Change] = []
    lone_base: list[Lone] = []
    lone_candidate: list[Lone] = []
    for digest in digests:
        theirs: dict[int, tuple[Run, Label, State]] = {}
        for cell in _cells(candidate, suite_id, digest, keep):
            if _done(cell[2]) and cell[0].rep not in theirs:
                theirs[cell[0].rep] = cell
            else:
                lone_candidate.append(_lone(cell, digest, cell[0].idx))
        by_split: dict[str, Change] = {}
        for cell in _cells(base, suite_id, digest, keep):
            run, label, state = cell
            partner = theirs.pop(run.rep, None)
            if not _done(state) or partner is None:
                lone_base.append(_lone(cell, digest, run.pos))
                if partner is not None:
                    lone_candidate.append(_lone(partner, digest, partner[0].idx))
                continue
            change = by_split.get(label[0])
            if change is None:
                change = by_split[label[0]] = Change(digest, run.idx, label, partner[1])
            elif run.idx < change.first:  # read out of idx order: the first pair names it
                change.first, change.base, change.candidate = run.idx, label, partner[1]
            change.runs += 1
            change.base_passed += state[2]
            change.candidate_passed += partner[2][2]
        lone_candidate += [_lone(cell, digest, cell[0].idx) for cell in theirs.values()]
        changes += by_split.values()
    changes.sort(key=lambda change: change.first)
    lone_base.sort(key=lambda c: c.order)
    lone_candidate.sort(key=lambda c: c.order)
    return changes, lone_base, lone_candidate
