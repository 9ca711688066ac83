"""What a report or a comparison reads: one eval, its suites and its cells, from the database.

Nothing here comes from a runner's memory: the eval row (plan, status,
timestamps, result), the installed suites it names (digests, the number of
suite-level checks, δ) and every cell as recorded. So a report of a resumed
eval is the report of the same rows as one that never crashed.

A cell's stored values are taken as they are, whatever a store holds (one
written by an older holon, or by hand): what a report reads as text (tags,
an error, the case id) is made text and bounded here, what it reads as a
number or a code (HTTP status, cost source, latency) is kept only when it
is one, and the output and check results stay data for `_values.bounded`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from evals._integrity import author_digests, keyed_digest, shown_splits
from evals.reports._attempts import AttemptData, attempts_of
from evals.reports._values import bounded_text, text_of
from evals.suites._loaders import pinned_file
from evals.suites._model import DEFAULT_OVERFIT_DELTA
from records import CellStatus, EvalInfo, EvalStatus, ReportCell, Store
from schema.documents import parse_document
from schema.errors import HolonError, NotFound
from schema.jsontext import loads

__all__ = [
    "CellData",
    "EvalData",
    "EvalSource",
    "SuiteData",
    "load_eval",
    "open_eval",
    "stored_cells",
]

SUITE_FILE = "suite.yaml"
COST_SOURCES = ("priced", "reported", "none")
# Cells read from the store at a time: a page's rows, JSON columns decoded, are about
# 2 MB for bench/eval's cells (six check results each), and a report of any size holds
# no more of them (`stored_cells`).
PAGE_CELLS = 100
ID_LIMIT = 200  # a case id or tag longer than this (none is) shows cut, with its sha256
AUTHOR = shown_splits(operator=False)  # the splits an author's views are built from
# A latency past this (about 31,000 years) is not one; its 0.1 ms text would not fit.
LATENCY_LIMIT_MS = 1e15


@dataclass(frozen=True)
class SuiteData:
    """One suite of an eval's plan, with what the store knows of that version."""

    id: str
    version: int
    capability: str
    title: str | None  # None when the version is no longer installed
    suite_digest: str  # as the plan pinned it
    digests: dict[str, str] | None  # spec, dataset, checks, suite; None when not installed
    holdout_epoch: int  # the operator's: never in an author's report
    repetitions: int
    threshold: Decimal
    max_cost_usd: str
    timeout_s: str
    overfit_delta: Decimal
    # How many leading check results of every cell are the suite's own checks
    # (the output schema check and suite.yaml's `checks`), the rest being a
    # case's own. None when unknown: every check then counts as a case's own.
    suite_checks: int | None
    # The same digests as an author may read them: those covering holdout content
    # keyed under the store's holdout secret (evals._integrity.keyed_digest).
    author_suite_digest: str = ""
    author_digests: dict[str, str] | None = None
    license: str | None = None  # the suite's data licence (suite.yaml `license`)
    # Each case's input by (split, case id), as the installed case files hold it
    # (fixture references unresolved); a generated holdout's are not kept.
    inputs: Mapping[tuple[str, str], Any] | None = None

    @property
    def checks_digest(self) -> str | None:
        return None if self.digests is None else self.digests.get("checks_digest")

    def suite_digest_for(self, operator: bool) -> str:
        return self.suite_digest if operator else self.author_suite_digest

    def digests_for(self, operator: bool) -> dict[str, str] | None:
        return self.digests if operator else self.author_digests


@dataclass(frozen=True)
class CellData:
    """One cell as recorded (status `done`) or still to be (`pending`, `running`)."""

    idx: int
    suite_id: str
    split: str
    case_id: str
    case_digest: str
    repetition: int
    tags: tuple[str, ...]
    request_id: str
    status: str
    outcome_code: str | None
    passed: bool
    cost_usd: Decimal | None
    cost_source: str | None
    latency_ms: float | None
    attempts: int
    http_status: int | None
    error: str | None
    output: Any
    checks: tuple[dict[str, Any], ...] | None  # None unless the outcome was ok
    grade_ms: float | None = None  # grading's time, when graded and recorded
    input_tokens: int | None = None  # as the agent reported them (usage), if it did
    output_tokens: int | None = None
    attempt_log: tuple[AttemptData, ...] = ()  # each try at reaching the agent, in order
    metadata: Any = None  # the answer's own `metadata` as stored (bounded), None when none

    @property
    def done(self) -> bool:
        return self.status == CellStatus.DONE

    @property
    def graded(self) -> bool:
        return self.done and self.outcome_code == "ok" and self.checks is not None


# The cells of an eval in order (idx), of one suite or (None) of all: read anew each call.
CellReader = Callable[[str | None], Iterator[CellData]]


@dataclass(frozen=True)
class EvalSource:
    """An eval as a report reads it: its row, suites and manifest in memory, its cells
    read when asked (`read`), from the store a page at a time, so a report of any size
    never holds them all."""

    info: EvalInfo
    suites: tuple[SuiteData, ...]
    read: CellReader
    manifest: dict[str, Any] | None = None


@dataclass(frozen=True)
class EvalData:
    info: EvalInfo
    suites: tuple[SuiteData, ...]
    cells: tuple[CellData, ...]
    manifest: dict[str, Any] | None = None  # the evaluated version's, as registered

    def source(self) -> EvalSource:
        """The eval as a report reads it, its cells from memory."""
        cells = self.cells

        def read(suite_id: str | None) -> Iterator[CellData]:
            return (c for c in cells if suite_id is None or c.suite_id == suite_id)

        return EvalSource(self.info, self.suites, read, self.manifest)

    @property
    def complete(self) -> bool:
        """Done with every cell recorded: only then may an author learn of its holdout."""
        return self.info.status == EvalStatus.DONE and all(c.done for c in self.cells)

    def public_only(self) -> EvalData:
        """The eval as an author's views are built from: its public cells alone, so no
        aggregate of theirs can move with a holdout cell (docs/integrity.md)."""
        return EvalData(
            self.info,
            self.suites,
            tuple(c for c in self.cells if c.split in AUTHOR),
            self.manifest,
        )

    def cells_of(self, suite_id: str, split: str | None = None) -> list[CellData]:
        return [
            c for c in self.cells if c.suite_id == suite_id and (split is None or c.split == split)
        ]


def _decimal(value: Any, default: Decimal) -> Decimal:
    try:
        number = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return default
    return number if number.is_finite() else default


def _suite_document(files: dict[str, str]) -> dict[str, Any] | None:
    try:
        text = files.get(SUITE_FILE)
        if text is None:
            return None
        value = parse_document(text, SUITE_FILE).value
    except HolonError:
        return None
    return value if isinstance(value, dict) else None


class CaseInputs(Mapping[tuple[str, str], Any]):
    """Each case's input by (split, id), kept as its case file's line and read when asked:
    a line is a few hundred bytes where its parsed value is ten times that, and a report
    reads each input once, as it writes the case's row."""

    def __init__(self, lines: dict[tuple[str, str], str]) -> None:
        self._lines = lines

    def __getitem__(self, key: tuple[str, str]) -> Any:
        return loads(self._lines[key])["input"]

    def __contains__(self, key: object) -> bool:
        return key in self._lines

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)


def _case_inputs(files: dict[str, str], document: dict[str, Any]) -> CaseInputs:
    """Each case's input by (split, id), from the installed case files; a line that does
    not read (a store holds what it holds) is left out."""
    lines: dict[tuple[str, str], str] = {}
    for split in ("public", "holdout"):
        named = document.get(split)
        relative = named.get("file") if isinstance(named, dict) else None
        if isinstance(named, dict) and "loader" in named:  # its cases as installed
            relative = pinned_file(split)
        text = files.get(relative) if isinstance(relative, str) else None
        for line in (text or "").splitlines():
            try:
                case = loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(case, dict) and isinstance(case.get("id"), str) and "input" in case:
                lines[(split, case["id"])] = line
    return CaseInputs(lines)


def _suite(store: Store, entry: dict[str, Any], secret: bytes, *, inputs: bool) -> SuiteData:
    suite_id, version = str(entry["id"]), int(entry["version"])
    title: str | None = None
    digests: dict[str, str] | None = None
    try:
        installed = store.suites.get(suite_id, version)
    except NotFound:
        installed = None
    if installed is not None:
        title = None if installed.title is None else text_of(installed.title)
        digests = {str(k): str(v) for k, v in sorted(installed.digests.items())}
    files = store.suites.files(suite_id, version) if installed is not None else {}
    document = _suite_document(files)
    delta = DEFAULT_OVERFIT_DELTA
    suite_checks: int | None = None
    license: str | None = None
    case_inputs: CaseInputs | None = None
    if document is not None:
        if isinstance(document.get("license"), str):
            license = text_of(document["license"])
        case_inputs = _case_inputs(files, document) if inputs else None
        overfit = document.get("overfit")
        if isinstance(overfit, dict) and "delta" in overfit:
            delta = _decimal(overfit["delta"], DEFAULT_OVERFIT_DELTA)
        checks = document.get("checks", [])
        # The loader puts the implicit output schema check first, then these.
        suite_checks = 1 + (len(checks) if isinstance(checks, list) else 0)
    return SuiteData(
        id=suite_id,
        version=version,
        capability=str(entry["capability"]),
        title=title,
        suite_digest=str(entry["suite_digest"]),
        digests=digests,
        holdout_epoch=int(entry["holdout_epoch"]),
        repetitions=int(entry["repetitions"]),
        threshold=_decimal(entry["threshold"], Decimal(1)),
        max_cost_usd=str(entry["max_cost_usd"]),
        timeout_s=str(entry["timeout_s"]),
        overfit_delta=delta,
        suite_checks=suite_checks,
        author_suite_digest=keyed_digest(secret, str(entry["suite_digest"])),
        author_digests=author_digests(secret, digests),
        license=license,
        inputs=case_inputs,
    )


def _tags(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(text_of(tag, ID_LIMIT) for tag in value)


def _latency(value: Any) -> float | None:
    # A column holds a float; a stored JSON document an exact Decimal.
    if not isinstance(value, float | int | Decimal) or isinstance(value, bool):
        return None
    if isinstance(value, Decimal) and not value.is_finite():
        return None
    if not -LATENCY_LIMIT_MS < value < LATENCY_LIMIT_MS:  # float() of 10**400 overflows
        return None
    number = float(value)
    return number if math.isfinite(number) and 0 <= number < LATENCY_LIMIT_MS else None


def _http_status(value: Any) -> int | None:
    # The executor stores the status line's code; anything else is not one.
    is_code = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1000
    return value if is_code else None


def _tokens(value: Any) -> int | None:
    # A count the executor validated when it stored it; a store may hold anything.
    is_count = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**15
    return value if is_count else None


def _cell(row: ReportCell) -> CellData:
    outcome = row.outcome if isinstance(row.outcome, dict) else {}
    checks = row.checks
    source = outcome.get("cost_source")
    error = outcome.get("error")
    stored_usage = outcome.get("usage")
    usage: dict[str, Any] = stored_usage if isinstance(stored_usage, dict) else {}
    return CellData(
        idx=row.idx,
        suite_id=row.suite_id,
        split=row.split,
        case_id=bounded_text(row.case_id, ID_LIMIT),
        case_digest=row.case_digest,
        repetition=row.repetition,
        tags=_tags(row.tags),
        request_id=row.request_id,
        status=row.status,
        outcome_code=row.outcome_code if row.status == CellStatus.DONE else None,
        passed=bool(row.passed) if row.status == CellStatus.DONE else False,
        cost_usd=None if row.cost_usd is None else _decimal(row.cost_usd, Decimal(0)),
        cost_source=source if isinstance(source, str) and source in COST_SOURCES else None,
        latency_ms=_latency(row.latency_ms),
        attempts=row.attempts,
        http_status=_http_status(outcome.get("http_status")),
        error=None if error is None else text_of(error),
        output=row.output,
        checks=None
        if not isinstance(checks, list)
        else tuple(c for c in checks if isinstance(c, dict)),
        grade_ms=_latency(outcome.get("grade_ms")),
        input_tokens=_tokens(usage.get("input_tokens")),
        output_tokens=_tokens(usage.get("output_tokens")),
        attempt_log=attempts_of(outcome.get("attempts")),
        metadata=outcome.get("metadata"),
    )


def stored_cells(
    store: Store, eval_id: str, suite_id: str | None = None, *, page: int = PAGE_CELLS
) -> Iterator[CellData]:
    """The eval's cells in order (of one suite with `suite_id`), read `page` at a time."""
    after = -1
    while True:
        rows = store.evals.report_cells(eval_id, after=after, limit=page, suite_id=suite_id)
        for row in rows:
            yield _cell(row)
        if len(rows) < page:
            return
        after = rows[-1].idx


def open_eval(store: Store, eval_id: str, *, inputs: bool = True) -> EvalSource:
    """The eval and its planned suites, its cells read when asked; NotFound for an unknown id.
    Without `inputs` its suites hold no case inputs (a comparison shows none)."""
    info = store.evals.get(eval_id)
    if info.imported:
        # Run elsewhere: its cells are the report it was imported from (evals._import),
        # bounded as an import is (docs/architecture.md, a report's 20 MiB).
        from evals.reports._imported import data_from_report

        report = store.imports.report(eval_id)
        return data_from_report(report, store.suites.holdout_secret(), info).source()
    plan_suites: Sequence[dict[str, Any]] = info.plan.get("suites", [])
    secret = store.suites.holdout_secret()
    suites = tuple(_suite(store, entry, secret, inputs=inputs) for entry in plan_suites)
    try:
        manifest: dict[str, Any] | None = store.agents.manifest(info.agent_id, info.agent_version)
    except NotFound:  # the agent is gone: the report still reads
        manifest = None

    def read(suite_id: str | None) -> Iterator[CellData]:
        return stored_cells(store, eval_id, suite_id)

    return EvalSource(info=info, suites=suites, read=read, manifest=manifest)


def load_eval(store: Store, eval_id: str) -> EvalData:
    """The eval, its planned suites and its cells in order, all in memory (a comparison
    pairs them); NotFound for an unknown id."""
    source = open_eval(store, eval_id)
    return EvalData(source.info, source.suites, tuple(source.read(None)), source.manifest)
