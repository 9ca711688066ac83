"""Importing an eval's JSON report from another store (docs/evals.md, "Imported evals").

`import_report` takes the text `holon evals report ID --format json
--audience operator` wrote and, before it keeps anything:

1. bounds it (`MAX_REPORT_BYTES`), reads it (exact numbers, bounded) and
   checks it against `schema/report.schema.json`;
2. checks that its counts add up: one cell per repetition of every case,
   each recorded, as many cells as the report says, suites and cases named
   once, a suite per claimed capability at most; and that its digests do: each
   suite's digest is the digest of its spec, dataset and checks digests, the
   plan's that of the agent and the suites' digests, epochs and repetitions;
3. recomputes every derived number by reading the report back as the eval
   it describes (`evals.reports._imported`) and rendering it again with the
   function that rendered it (`report_from_data`: rates, intervals,
   stability, check and tag rates, outcome counts, latency, cost, usage,
   overfit verdicts, suite scores, `eval_score`), and the scored part of the
   record with `evals._scores`; the first difference refuses the report,
   with its JSON path, the value the report holds and the recomputed one;
4. checks its cases against this store's installed suites where it can: a
   suite installed here with the same digest must have exactly the report's
   public cases (ids, digests, inputs) and, when both stores key holdout
   digests alike, its holdout cases; every cell graded `ok` whose output the
   report carries whole is graded again with the installed suite's checks;
5. keeps it as an imported eval (`records._imports`), labelled with its
   origin and the time of import, writing no record.

What this proves is that the report is internally consistent, and where the
suite is installed here, that it speaks of this suite's cases and grades its
outputs as this suite would. It cannot prove that an agent was ever called,
or which one: that is what certificates are for.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from evals._finish import summarise
from evals._import_suites import check_suite, report_error
from evals._plan import plan_digest
from evals._scores import EvalScore
from evals.reports._aggregate import tally_cases
from evals.reports._imported import data_from_report, info_from_report, parse_timestamp
from evals.reports._model import report_from_data, score_of
from evals.suites._identity import combined_digest
from records import CellStatus, EvalInfo, EvalStatus, NewImport, Store, eval_id, utc_text, utcnow
from schema import validator
from schema.documents import MAX_DEPTH, explain
from schema.errors import InputError, Location, PayloadTooLarge, UsageError
from schema.jsontext import NumberError, PathKey, dumps, format_path, loads, max_depth

__all__ = ["MAX_REPORT_BYTES", "import_report"]

MAX_REPORT_BYTES = 20 * 1024 * 1024
MAX_SOURCE_CHARS = 500  # where a report came from: a file name, a URL
# The longest agent id and version the store keeps (records._models).
MAX_AGENT_ID = 79
MAX_AGENT_VERSION = 64
SHOWN_CHARS = 200  # of a value in an error message
# The report's fields that say what rendered it, not what was measured: a report
# read back is rendered by this holon, on this host, and states this holon's policies
# (a rule that judged differently shows as a verdict that does not recompute).
NOT_DERIVED: frozenset[PathKey] = frozenset({("generated_by",), ("policies",)})
# Likewise what a check row's metric is declared to be (its unit and direction): stated
# by the renderer's predicates, not computed from the cells.
DECLARED = frozenset({"unit", "direction"})
LEAVES_FIRST = frozenset({"suites", "cases", "cells"})


# -- 1. reading -----------------------------------------------------------------------


def _read(raw: bytes, file: str | None) -> dict[str, Any]:
    if len(raw) > MAX_REPORT_BYTES:
        raise PayloadTooLarge(
            f"the report is {len(raw)} bytes, more than the {MAX_REPORT_BYTES} an import reads",
            details={"limit": MAX_REPORT_BYTES},
        )
    where = Location(file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", location=where) from None
    try:
        value = loads(text)
    except NumberError as exc:
        raise report_error(exc.problem, exc.path, file) from None
    except RecursionError:
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", location=where) from None
    except ValueError as exc:
        line, column = getattr(exc, "lineno", None), getattr(exc, "colno", None)
        message = getattr(exc, "msg", str(exc))
        raise InputError(
            f"not valid JSON: {message}", location=Location(file, line, column)
        ) from None
    if max_depth(value, MAX_DEPTH) > MAX_DEPTH:
        raise InputError(f"nested more than {MAX_DEPTH} levels deep", location=where)
    if not isinstance(value, dict):
        raise report_error("expected a report (a JSON object)", (), file)
    problems = [explain(e) for e in itertools.islice(validator("report").iter_errors(value), 50)]
    if problems:
        # The first in document order that says most: the shallowest path.
        message, path = min(problems, key=lambda p: (len(p[1]), format_path(p[1])))
        raise report_error(f"not a holon report: {message}", path, file)
    return value


# -- 2. counts ------------------------------------------------------------------------


def _counts(report: dict[str, Any], file: str | None) -> None:
    if report["audience"] != "operator":
        raise report_error(
            "expected 'operator': an author's report has the holdout as one rate per suite, "
            "not its cells, so its scores cannot be recomputed (export it with "
            "--audience operator)",
            ("audience",),
            file,
        )
    view = report["eval"]
    if view["status"] != EvalStatus.DONE or not view["complete"]:
        raise report_error(
            f"expected a complete eval, got one {view['status']} with cells missing: an "
            "incomplete eval has no verdict to import",
            ("eval", "complete"),
            file,
        )
    agent = report["agent"]
    for key, limit in (("id", MAX_AGENT_ID), ("version", MAX_AGENT_VERSION)):
        if not 0 < len(agent[key]) <= limit:
            raise report_error(f"expected 1 to {limit} characters", ("agent", key), file)
    for key in ("created_at", "finished_at"):
        _timestamp(view[key], ("eval", key), file)
    claimed = agent["claimed_capabilities"]
    seen_suites: set[str] = set()
    seen_capabilities: set[str] = set()
    total = 0
    for i, suite in enumerate(report["suites"]):
        at: PathKey = ("suites", i)
        if suite["id"] in seen_suites:
            raise report_error(f"suite {suite['id']!r} is in the report twice", (*at, "id"), file)
        if suite["capability"] not in claimed or suite["capability"] in seen_capabilities:
            raise report_error(
                "expected a capability the agent claims, one suite each",
                (*at, "capability"),
                file,
            )
        seen_suites.add(suite["id"])
        seen_capabilities.add(suite["capability"])
        _decimal(suite["settings"], "threshold", (*at, "settings"), Decimal(0), file)
        _decimal(suite["settings"], "overfit_delta", (*at, "settings"), Decimal(0), file, True)
        repetitions = suite["settings"]["repetitions"]
        seen_cases: set[tuple[str, str]] = set()
        for j, case in enumerate(suite["cases"]):
            here: PathKey = (*at, "cases", j)
            named = (case["split"], case["case_id"])
            if named in seen_cases:
                raise report_error(
                    f"{case['split']} case {case['case_id']!r} is in the suite twice",
                    (*here, "case_id"),
                    file,
                )
            seen_cases.add(named)
            cells = case["cells"]
            if len(cells) != repetitions:
                raise report_error(
                    f"expected {repetitions} cells (one per repetition), got {len(cells)}",
                    (*here, "cells"),
                    file,
                )
            for k, cell in enumerate(cells):
                if cell["repetition"] != k:
                    raise report_error(
                        f"expected repetition {k}", (*here, "cells", k, "repetition"), file
                    )
                if cell["status"] != CellStatus.DONE:
                    raise report_error(
                        "expected 'done': a complete eval has every cell recorded",
                        (*here, "cells", k, "status"),
                        file,
                    )
            total += len(cells)
    if total != report["settings"]["cells"]:
        raise report_error(
            f"the report says {report['settings']['cells']} cells, its cases hold {total}",
            ("settings", "cells"),
            file,
            stored=report["settings"]["cells"],
            recomputed=total,
        )


def _timestamp(text: str | None, path: PathKey, file: str | None) -> None:
    try:
        if text is not None:
            parse_timestamp(text)
    except ValueError:
        raise report_error("expected a UTC time (YYYY-MM-DDTHH:MM:SSZ)", path, file) from None


def _decimal(
    settings: dict[str, Any],
    key: str,
    at: PathKey,
    low: Decimal,
    file: str | None,
    above: bool = False,
) -> None:
    """A suite setting written as decimal text: a number from `low` (exclusive when `above`)
    to 1, as a suite's threshold and overfit delta are (evals.suites)."""
    text = settings[key]
    try:
        value = Decimal(text) if len(text) <= 40 else None
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite() or not (low < value if above else low <= value):
        value = None
    if value is None or value > 1:
        bound = "above" if above else "from"
        raise report_error(
            f"expected decimal text of a number {bound} {low} to 1", (*at, key), file
        )


# -- 2b. digests ------------------------------------------------------------------------

DIGEST_PARTS = ("spec_digest", "dataset_digest", "checks_digest")


def report_plan_digest(report: dict[str, Any]) -> str:
    """The plan digest of the eval a report describes, from its agent and suites."""
    return plan_digest(
        report["agent"]["id"],
        report["agent"]["version"],
        [
            [s["id"], s["version"], s["suite_digest"], s["holdout_epoch"],
             s["settings"]["repetitions"]]
            for s in report["suites"]
        ],
    )  # fmt: skip


def _digests(report: dict[str, Any], file: str | None) -> None:
    """A suite's digest is the digest of its three parts (evals.suites._identity), and the
    plan's digest that of the agent and the suites' digests, epochs and repetitions
    (evals._plan): both are recomputed from what the report holds, so a digest replaced
    (zeros, another suite's) is refused where it stands, whether or not the suite is
    installed here."""
    for i, suite in enumerate(report["suites"]):
        at: PathKey = ("suites", i)
        parts = suite["digests"]
        if not isinstance(parts, dict) or any(k not in parts for k in DIGEST_PARTS):
            raise report_error(
                f"expected the suite's {', '.join(DIGEST_PARTS)}: its suite_digest is "
                "recomputed from them",
                (*at, "digests"),
                file,
            )
        spec, dataset, checks = (parts[key] for key in DIGEST_PARTS)
        combined = combined_digest(spec, dataset, checks)
        for path, stored in (
            ((*at, "suite_digest"), suite["suite_digest"]),
            ((*at, "digests", "suite_digest"), parts.get("suite_digest", combined)),
        ):
            if stored != combined:
                raise report_error(
                    f"the suite digest does not recompute: the report holds {stored}, its "
                    f"spec, dataset and checks digests give {combined}",
                    path,
                    file,
                    stored=stored,
                    recomputed=combined,
                )
    plan = report_plan_digest(report)
    if report["eval"]["plan_digest"] != plan:
        raise report_error(
            f"the plan digest does not recompute: the report holds "
            f"{report['eval']['plan_digest']}, its agent and suites give {plan}",
            ("eval", "plan_digest"),
            file,
            stored=report["eval"]["plan_digest"],
            recomputed=plan,
        )


# -- 3. recomputing ----------------------------------------------------------------------


def _shown(value: Any) -> Any:
    """A value as an error shows it: a scalar as it is (text cut), a container by size."""
    if isinstance(value, dict):
        return f"an object of {len(value)} keys"
    if isinstance(value, list):
        return f"an array of {len(value)} items"
    if isinstance(value, str) and len(value) > SHOWN_CHARS:
        return value[:SHOWN_CHARS] + "…"
    return value


def _same(a: Any, b: Any) -> bool:
    numbers = (int, Decimal)
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, numbers) and isinstance(b, numbers):
        return Decimal(a) == Decimal(b)
    return bool(type(a) is type(b) and a == b)


_ABSENT = object()


def _stated(path: PathKey) -> bool:
    """Whether `path` holds what the renderer states rather than what the cells give."""
    return path in NOT_DERIVED or (
        len(path) >= 3 and path[-3] == "metrics" and path[-1] in DECLARED
    )


def differences(
    stored: Any, recomputed: Any, path: PathKey = ()
) -> Iterator[tuple[PathKey, Any, Any]]:
    """Where two JSON values differ, in the stored value's order but suites, cases and cells
    first: (path, stored, recomputed), `_ABSENT` for a key one side lacks."""
    if _stated(path):
        return
    if isinstance(stored, dict) and isinstance(recomputed, dict):
        # Cells before what is counted over them: a difference is found where it starts.
        ordered = sorted(stored, key=lambda k: k not in LEAVES_FIRST)
        for key in ordered:
            yield from differences(stored[key], recomputed.get(key, _ABSENT), (*path, key))
        for key, value in recomputed.items():
            if key not in stored and not _stated((*path, key)):
                yield (*path, key), _ABSENT, value
        return
    if isinstance(stored, list) and isinstance(recomputed, list):
        for index, (a, b) in enumerate(zip(stored, recomputed, strict=False)):
            yield from differences(a, b, (*path, index))
        if len(stored) != len(recomputed):
            yield path, stored, recomputed
        return
    if not _same(stored, recomputed):
        yield path, stored, recomputed


def _first_difference(
    stored: Any, recomputed: Any, file: str | None, what: str, at: PathKey = ()
) -> None:
    for path, a, b in differences(stored, recomputed, at):
        shown_a = "nothing" if a is _ABSENT else _shown(a)
        shown_b = "nothing" if b is _ABSENT else _shown(b)
        raise report_error(
            f"{what} does not recompute: the report holds {dumps(shown_a)}, its cells give "
            f"{dumps(shown_b)}",
            path,
            file,
            stored=None if a is _ABSENT else _shown(a),
            recomputed=None if b is _ABSENT else _shown(b),
        )


def _json(value: Any) -> Any:
    # As the report's JSON reads: Decimals and ints, no Fractions or tuples.
    return loads(dumps(value))


def _record(report: dict[str, Any], score: EvalScore, file: str | None) -> None:
    """The record the report says its eval produced: its scored part is the scores'."""
    block = report["record"]
    if block is None:
        return
    value = block["value"]
    expected = {
        "agent": report["agent"]["id"],
        "agent_version": report["agent"]["version"],
        "eval_id": report["eval"]["id"],
        **_json(score.to_json()),
        "holdout_epochs": {
            s["id"]: s["holdout_epoch"]
            for s in report["suites"]
            if any(c["split"] == "holdout" for c in s["cases"])
        },
    }
    stored = {key: value.get(key, _ABSENT) for key in expected}
    _first_difference(stored, expected, file, "the record", ("record", "value"))


def _recompute(report: dict[str, Any], secret: bytes, file: str | None) -> None:
    info = info_from_report(report)
    data = data_from_report(report, secret, info)
    again = _json(report_from_data(data, "operator"))
    _first_difference(report, again, file, "the report")
    _record(report, score_of(data, tally_cases(data.cells)), file)


# -- 5. keeping ------------------------------------------------------------------------


def import_report(
    store: Store,
    raw: bytes,
    *,
    home: Path,
    source: str | None = None,
    imported_by: str | None = None,
    file: str | None = None,
) -> EvalInfo:
    """Check `raw` (a report's JSON text) and keep it as an imported eval; InputError with the
    JSON path of the first thing that does not hold, PayloadTooLarge over MAX_REPORT_BYTES."""
    if source is not None and len(source) > MAX_SOURCE_CHARS:
        raise UsageError(
            f"the source must be at most {MAX_SOURCE_CHARS} characters",
            details={"limit": MAX_SOURCE_CHARS},
        )
    report = _read(raw, file)
    _counts(report, file)
    _digests(report, file)
    secret = store.suites.holdout_secret()
    _recompute(report, secret, file)
    checked = [
        {"suite": s["id"], "cases": check_suite(store, home, i, s, secret, file)}
        for i, s in enumerate(report["suites"])
    ]
    origin = {
        "origin": {
            "generated_by": report["generated_by"],
            "eval_id": report["eval"]["id"],
            "audience": report["audience"],
            "source": source,
        },
        "imported_at": utc_text(utcnow()),
        "imported_by": imported_by,
        "checked": checked,
    }
    info = info_from_report(report, eval_id=eval_id(), origin=origin)
    data = data_from_report(report, secret, info)
    cells = list(data.cells)
    record = report["record"]
    result = {
        "record": None if record is None else record["value"],
        "summary": summarise(cells),
        "public_summary": summarise([c for c in cells if c.split == "public"]),
        "meets_thresholds": report["summary"]["meets_thresholds"],
    }
    return store.imports.create(
        NewImport(
            eval_id=info.id,
            agent_id=info.agent_id,
            agent_version=info.agent_version,
            plan=info.plan,
            plan_digest=info.plan_digest,
            full_plan=info.full_plan,
            cells_total=info.cells_total,
            created_at=info.created_at,
            finished_at=info.finished_at,
            result=result,
            origin=origin,
            report=report,
        )
    )
