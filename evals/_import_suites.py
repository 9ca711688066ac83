"""An imported report against this store's installed suites (docs/evals.md, "Imported evals").

A suite installed here with the report's suite digest is the suite the report
speaks of: every public case of the report must be one of its cases (id,
digest, input) and every one of its cases must be in the report; its holdout
cases too when the holdout is a stored file and the two stores key holdout
digests alike (an HMAC under each store's secret). Every cell graded `ok`
whose output the report carries whole is graded again with the installed
suite's checks, and its verdict must be the report's. A suite not installed
here, or installed with another digest, cannot be checked: what could be is
said per suite, and kept with the import.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from evals._cell import PreparedCase, graded_values, prepare
from evals._runner import cache_for
from evals.checks import grade
from evals.reports._values import bounded, shows_a_cut
from evals.suites import (
    Case,
    Suite,
    epoch_holdout,
    holdout_case_digest,
    load_installed,
    public_case_digest,
)
from evals.suites._identity import case_identity
from records import Store
from schema.canonical import canonical_json
from schema.errors import InputError, Location, NotFound
from schema.jsontext import PathKey, format_path

__all__ = ["check_suite", "report_error"]


def report_error(message: str, path: PathKey, file: str | None, **details: Any) -> InputError:
    """A report refused at `path` (exit 2, 422 `invalid_report`)."""
    return InputError(
        message,
        location=Location(file, path=format_path(path)),
        details=details,
        code="invalid_report",
    )


def _whole(value: Any) -> bool:
    """Whether a report carries this output whole: nothing cut for display, and not the
    placeholder a cell stores of an output over its bound (evals._cell)."""
    if isinstance(value, dict) and "$truncated" in value:
        return False
    return not shows_a_cut(value)


def check_suite(
    store: Store, home: Path, i: int, suite: dict[str, Any], secret: bytes, file: str | None
) -> str:
    """What could be checked of one suite against this store; refuses what is found false."""
    try:
        installed = store.suites.get(suite["id"], suite["version"])
    except NotFound:
        return "not installed here: its cases could not be checked"
    if installed.digests.get("suite_digest") != suite["suite_digest"]:
        return "installed here with another digest: its cases could not be checked"
    local = load_installed(store, suite["id"], home, suite["version"])
    public = {c.id: c for c in local.public}
    at: PathKey = ("suites", i, "cases")
    rows = suite["cases"]
    for j, row in enumerate(rows):
        if row["split"] != "public":
            continue
        case = public.get(row["case_id"])
        if case is None:
            raise report_error(
                f"no public case {row['case_id']!r} in {suite['id']} v{suite['version']} as "
                "installed here (same suite digest)",
                (*at, j, "case_id"),
                file,
            )
        if public_case_digest(case, local) != row["case_digest"]:
            raise report_error(
                "expected the installed case's digest", (*at, j, "case_digest"), file
            )
        if row["input"] is not None and canonical_json(bounded(case.input)) != canonical_json(
            row["input"]
        ):
            raise report_error("expected the installed case's input", (*at, j, "input"), file)
    _grade_again(local, public, rows, "public", home, at, file)
    shown = {r["case_id"] for r in rows if r["split"] == "public"}
    missing = sorted(set(public) - shown)
    if missing:
        raise report_error(
            f"the installed suite has public cases the report lacks: {', '.join(missing[:5])}",
            at,
            file,
        )
    return "public cases match the installed suite; " + _holdout_check(
        local, rows, secret, home, at, file, epoch=suite["holdout_epoch"]
    )


def _holdout_check(
    local: Suite,
    rows: Sequence[dict[str, Any]],
    secret: bytes,
    home: Path,
    at: PathKey,
    file: str | None,
    *,
    epoch: int,
) -> str:
    held = [(j, r) for j, r in enumerate(rows) if r["split"] == "holdout"]
    if local.holdout_file is None:
        return "a generated holdout: its cases could not be checked"
    stored = {
        holdout_case_digest(secret, case_identity(c, local)): c.id for c in local.holdout_file
    }
    if not any(stored.get(r["case_digest"]) == r["case_id"] for _, r in held):
        # Holdout digests are keyed under the store's secret: another store's differ.
        return "holdout digests keyed under another store's secret: not checked"
    # A pool's subset is cut again for the report's pinned epoch, as a resumed eval's is:
    # cases of the pool that are not that epoch's subset do not match.
    graded = epoch_holdout(local, secret, epoch)
    ids = {c.id for c in graded}
    ours = {d: case_id for d, case_id in stored.items() if case_id in ids}
    matching = [(j, r) for j, r in held if ours.get(r["case_digest"]) == r["case_id"]]
    if len(matching) != len(held) or len(held) != len(ours):
        j, _ = next(((j, r) for j, r in held if (j, r) not in matching), (len(rows), None))
        raise report_error(
            f"the holdout cases do not match the installed suite's {len(ours)}",
            (*at, j),
            file,
        )
    _grade_again(local, {c.id: c for c in graded}, rows, "holdout", home, at, file)
    return "holdout cases match the installed suite"


def _grade_again(
    local: Suite,
    cases: dict[str, Case],
    rows: Sequence[dict[str, Any]],
    split: str,
    home: Path,
    at: PathKey,
    file: str | None,
) -> None:
    """Grade every cell of `split` that was graded (`ok`) and whose output the report carries
    whole, with the installed suite's checks: its verdict must be the report's."""
    cache = cache_for(home)
    for j, row in enumerate(rows):
        case = cases.get(row["case_id"]) if row["split"] == split else None
        if case is None or any(check.uses_pdf for check in case.checks):
            continue  # a PDF check reads a file the report does not carry
        prepared: PreparedCase | None = None
        for k, cell in enumerate(row["cells"]):
            if cell["outcome"] != "ok" or cell["checks"] is None or not _whole(cell["output"]):
                continue
            prepared = prepared or prepare(local, case, cache)
            usage = cell["usage"] or {}
            document = graded_values(
                prepared,
                cell["output"],
                input_tokens=usage.get("input_tokens"),
                output_tokens=usage.get("output_tokens"),
                cost_usd=None if cell["cost_usd"] is None else Decimal(cell["cost_usd"]),
            )
            passed = grade(case.checks, document).passed
            if passed != cell["passed"]:
                raise report_error(
                    f"graded again with the installed suite's checks, the output "
                    f"{'passes' if passed else 'fails'}, where the report says it "
                    f"{'passed' if cell['passed'] else 'failed'}",
                    (*at, j, "cells", k, "passed"),
                    file,
                    stored=cell["passed"],
                    recomputed=passed,
                )
