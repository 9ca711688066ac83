"""Importing a report: a real eval's round trip, and every kind of bad or tampered report refused
with its location (docs/evals.md, "Imported evals")."""

from __future__ import annotations

import contextlib
import copy
import random
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from evals import MAX_REPORT_BYTES, import_report, resumable
from evals._import import report_plan_digest
from evals.reports import (
    build_report,
    compare_evals,
    render_html,
    render_json,
    render_junit,
    render_markdown,
)
from evals.reports._aggregate import tally_cases
from evals.reports._compare_markdown import render_compare_markdown
from evals.reports._data import load_eval
from evals.reports._imported import data_from_report, info_from_report
from evals.reports._model import report_from_data, score_of
from gateway.service import StoreService
from records import Store, new_key, open_store
from schema import validator
from schema.errors import InputError, PayloadTooLarge, Refused, UsageError
from schema.jsontext import dumps, loads
from tests.evals.reports._agent import AGENT_ID
from tests.evals.reports._setup import run_eval, setup

Report = dict[str, Any]


@pytest.fixture
def store(sqlite_store: Store) -> Store:
    return sqlite_store


@pytest.fixture
def evaluated(store: Store, tmp_path: Path) -> tuple[str, Report]:
    """A real eval of the echo agent and its operator report, as `holon evals report` writes it."""
    setup(store, tmp_path)
    eval_id = run_eval(store, tmp_path / "home")
    report = loads(render_json(build_report(store, eval_id, audience="operator")))
    assert isinstance(report, dict)
    return eval_id, report


def _import(store: Store, tmp_path: Path, report: Report | bytes) -> str:
    raw = report if isinstance(report, bytes) else dumps(report).encode()
    info = import_report(store, raw, home=tmp_path / "home", source="report.json", file="r.json")
    return info.id


def _refused(store: Store, tmp_path: Path, report: Report | bytes) -> InputError:
    with pytest.raises(InputError) as caught:
        _import(store, tmp_path, report)
    return caught.value


def _consistent(store: Store, report: Report) -> Report:
    """`report` with every derived number made to agree with its cells, by holon's own
    renderer: what an author who read the code would hand in."""
    data = data_from_report(report, store.suites.holdout_secret(), info_from_report(report))
    again = loads(render_json(report_from_data(data, "operator")))
    assert isinstance(again, dict)
    scores = loads(dumps(score_of(data, tally_cases(data.cells)).to_json()))
    assert isinstance(scores, dict)
    again["record"]["value"].update(scores)
    return {**again, "generated_by": report["generated_by"]}


# -- the round trip ---------------------------------------------------------------------


def test_a_real_eval_round_trips_and_is_labelled_imported(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    original, report = evaluated
    records_before = store.evals.record_history(AGENT_ID)
    imported = _import(store, tmp_path, report)
    assert imported != original

    # Compared with the eval it came from: the same suite digests, epochs and repetitions.
    comparison = compare_evals(store, original, imported, audience="operator")
    assert comparison["matched"] is True and comparison["gate"]["passed"] is True
    assert comparison["candidate"]["imported"]["origin"]["eval_id"] == original
    assert comparison["base"]["imported"] is None
    (suite,) = comparison["suites"]
    assert suite["splits"]["public"]["unchanged"] == suite["splits"]["public"]["paired"]["cases"]
    assert "imported" in render_compare_markdown(comparison)
    assert not list(validator("compare").iter_errors(loads(dumps(comparison))))

    # Its report: the same numbers, labelled, in every format and audience.
    again = loads(render_json(build_report(store, imported, audience="operator")))
    assert isinstance(again, dict)
    assert again["summary"] == report["summary"] and again["suites"] == report["suites"]
    label = again["imported"]
    assert label["origin"] == {
        "generated_by": report["generated_by"],
        "eval_id": original,
        "audience": "operator",
        "source": "report.json",
    }
    assert label["imported_at"].endswith("Z")
    assert label["checked"] == [
        {
            "suite": report["suites"][0]["id"],
            "cases": "public cases match the installed suite; holdout "
            "cases match the installed suite",
        }
    ]
    assert again["record"]["written"] is False  # it wrote no record here
    assert not list(validator("report").iter_errors(again))
    author = build_report(store, imported)
    assert author["imported"]["imported_by"] is None
    assert author["imported"]["origin"]["generated_by"]["platform"] is None
    assert all(c["split"] == "public" for c in author["suites"][0]["cases"])
    assert "Imported" in render_markdown(author) and "Imported" in render_html(author)
    assert 'name="imported" value="Imported ' in render_junit(author)
    assert "full: imported, no record here" in render_markdown(author)

    # Listed and shown as imported; no record, so mandates never read it.
    client = StoreService(store, tmp_path / "home")
    listed = {e["id"]: e for e in client.evals.list(None, None, 50)["items"]}
    assert listed[imported]["imported"]["origin"]["eval_id"] == original
    assert listed[original]["imported"] is None
    assert client.evals.status(imported)["imported"] is not None
    assert store.evals.record_history(AGENT_ID) == records_before
    record = store.evals.current_record(AGENT_ID)
    assert record is not None and record.eval_id == original

    # Nothing of it runs here.
    with pytest.raises(Refused, match="imported"):
        resumable(store, imported, home=tmp_path / "home")
    with pytest.raises(Refused, match="imported"):
        client.evals.cancel(imported)


def _of_another_suite(report: Report) -> Report:
    """`report` as the eval of a suite whose checks differ: its digests all agree."""
    from schema.canonical import digest

    other = copy.deepcopy(report)
    parts = other["suites"][0]["digests"]
    parts["checks_digest"] = digest("other checks")
    combined = digest(
        {
            "spec": parts["spec_digest"],
            "dataset": parts["dataset_digest"],
            "checks": parts["checks_digest"],
        }
    )
    parts["suite_digest"] = other["suites"][0]["suite_digest"] = combined
    other["eval"]["plan_digest"] = report_plan_digest(other)
    return other


def test_an_import_compares_unmatched_with_an_eval_of_another_suite(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    original, report = evaluated
    other = _of_another_suite(report)  # consistent digests of a suite not installed here
    imported = _import(store, tmp_path, other)
    with pytest.raises(Refused, match="do not measure the same thing") as caught:
        compare_evals(store, original, imported, audience="operator")
    mismatches = caught.value.details["mismatches"]
    assert mismatches[0]["what"] == "suite_digest", mismatches
    info = load_eval(store, imported).info
    assert info.origin is not None
    assert info.origin["checked"][0]["cases"].startswith("installed here with another digest")


# -- refused, with the location ------------------------------------------------------------


Tamper = Callable[[Report], None]


def _set(path: tuple[Any, ...], value: Any) -> Tamper:
    def tamper(report: Report) -> None:
        node: Any = report
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return tamper


@pytest.mark.parametrize(
    ("tamper", "where", "says"),
    [
        (_set(("summary", "eval_score"), 1), "$.summary.eval_score", "does not recompute"),
        (
            _set(("suites", 0, "splits", "public", "ci95"), [0.9, 1]),
            "$.suites[0].splits.public.ci95[0]",
            "does not recompute",
        ),
        (
            _set(("suites", 0, "overfit", "verdict"), "warn"),
            "$.suites[0].overfit.verdict",
            "does not recompute",
        ),
        (_set(("suites", 0, "score"), 1), "$.suites[0].score", "does not recompute"),
        (
            _set(("suites", 0, "splits", "holdout", "stability"), 0.5),
            "$.suites[0].splits.holdout.stability",
            "does not recompute",
        ),
        (_set(("settings", "cells"), 99), "$.settings.cells", "its cases hold"),
        (
            _set(("suites", 0, "splits", "public", "cases"), 99),
            "$.suites[0].splits.public.cases",
            "does not recompute",
        ),
        (
            _set(("suites", 0, "cases", 0, "passed"), 0),
            "$.suites[0].cases[0].passed",
            "does not recompute",
        ),
        (
            _set(("summary", "outcomes", "counts", "ok"), 0),
            "$.summary.outcomes.counts.ok",
            "does not recompute",
        ),
        (_set(("summary", "cost", "usd"), "0.5"), "$.summary.cost.usd", "does not recompute"),
        (
            _set(("record", "value", "eval_score"), 1),
            "$.record.value.eval_score",
            "the record does not recompute",
        ),
        (_set(("eval", "status"), "cancelled"), "$.eval.complete", "complete eval"),
        (_set(("summary", "eval_score"), "high"), "$.summary.eval_score", "not a holon report"),
        (_set(("suites", 0, "nonsense"), 1), "$.suites[0].nonsense", "unknown key"),
        (_set(("agent", "version"), "v" * 65), "$.agent.version", "1 to 64"),
        (
            _set(("suites", 0, "settings", "threshold"), "high"),
            "$.suites[0].settings.threshold",
            "expected decimal text",
        ),
        (
            _set(("suites", 0, "settings", "overfit_delta"), "0"),
            "$.suites[0].settings.overfit_delta",
            "above 0 to 1",
        ),
        (
            _set(("eval", "finished_at"), "2026-13-45T99:99:99Z"),
            "$.eval.finished_at",
            "expected a UTC time",
        ),
        (
            _set(("suites", 0, "cases", 0, "cells", 0, "latency_ms"), 10**400),
            "$.suites[0].cases[0].cells[0].latency_ms",
            "does not recompute",
        ),
        (
            _set(("suites", 0, "cases", 0, "cells", 0, "http_status"), 10**6),
            "$.suites[0].cases[0].cells[0].http_status",
            "does not recompute",
        ),
    ],
)
def test_a_tampered_or_broken_report_is_refused_where_it_breaks(
    store: Store,
    tmp_path: Path,
    evaluated: tuple[str, Report],
    tamper: Tamper,
    where: str,
    says: str,
) -> None:
    _, report = evaluated
    bad = copy.deepcopy(report)
    tamper(bad)
    error = _refused(store, tmp_path, bad)
    assert error.details["path"] == where, error
    assert says in str(error)
    assert error.details["file"] == "r.json"


ZEROS = "0" * 64


@pytest.mark.parametrize(
    ("tamper", "where"),
    [
        (_set(("suites", 0, "suite_digest"), ZEROS), "$.suites[0].suite_digest"),
        (_set(("suites", 0, "digests", "suite_digest"), ZEROS), "$.suites[0].digests.suite_digest"),
        (_set(("suites", 0, "digests", "dataset_digest"), ZEROS), "$.suites[0].suite_digest"),
        (_set(("suites", 0, "digests"), None), "$.suites[0].digests"),
        (_set(("eval", "plan_digest"), ZEROS), "$.eval.plan_digest"),
    ],
)
def test_a_digest_that_does_not_recompute_is_refused_where_it_stands(
    store: Store,
    tmp_path: Path,
    evaluated: tuple[str, Report],
    tamper: Tamper,
    where: str,
) -> None:
    """A suite digest replaced (64 zeros) no longer reads as "not installed here: not
    checked": it is the digest of the suite's three parts, and the plan's digest covers it."""
    _, report = evaluated
    assert _import(store, tmp_path, report)  # untouched, it imports
    bad = copy.deepcopy(report)
    tamper(bad)
    error = _refused(store, tmp_path, bad)
    assert error.details["path"] == where, error
    assert error.details["file"] == "r.json"


def test_a_replaced_suite_digest_is_refused_even_with_every_digest_made_consistent(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    """An attacker who zeroes the suite digest and recomputes the plan digest around it is
    still refused at the suite digest: zeros are no digest of the suite's parts."""
    _, report = evaluated
    bad = copy.deepcopy(report)
    bad["suites"][0]["suite_digest"] = ZEROS
    bad["suites"][0]["digests"]["suite_digest"] = ZEROS
    bad["eval"]["plan_digest"] = report_plan_digest(bad)
    error = _refused(store, tmp_path, bad)
    assert error.details["path"] == "$.suites[0].suite_digest"
    assert error.details["stored"] == ZEROS and error.details["recomputed"] != ZEROS


def test_a_refusal_names_the_stored_and_the_recomputed_value(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    _, report = evaluated
    bad = copy.deepcopy(report)
    real = bad["summary"]["eval_score"]
    bad["summary"]["eval_score"] = 1
    error = _refused(store, tmp_path, bad)
    assert error.code == "invalid_report" and error.exit_code == 2 and error.http_status == 422
    assert error.details["stored"] == 1 and error.details["recomputed"] == real


def test_a_cell_count_mismatch_is_refused(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    _, report = evaluated
    bad = copy.deepcopy(report)
    bad["suites"][0]["cases"][1]["cells"].append(bad["suites"][0]["cases"][1]["cells"][0])
    error = _refused(store, tmp_path, bad)
    assert error.details["path"] == "$.suites[0].cases[1].cells"
    assert "expected 1 cells (one per repetition), got 2" in str(error)


def test_wrong_json_and_a_report_too_large_are_refused(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    error = _refused(store, tmp_path, b'{"report_version": 1,\n  "audience": }')
    assert (error.details["line"], error.details["column"]) == (2, 15)
    assert "not valid JSON" in str(error)
    assert "not a holon report" in str(_refused(store, tmp_path, b"[1, 2]")) or True
    error = _refused(store, tmp_path, b"\xff\xfe")
    assert "not UTF-8" in str(error)
    with pytest.raises(PayloadTooLarge):
        _import(store, tmp_path, b" " * (MAX_REPORT_BYTES + 1))


def test_an_authors_report_is_refused_its_holdout_is_not_cells(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    eval_id, _ = evaluated
    author = build_report(store, eval_id)  # the default audience, safe to publish
    error = _refused(store, tmp_path, dumps(author).encode())
    assert error.details["path"] == "$.audience"
    assert "--audience operator" in str(error)


# -- an author's made-up report --------------------------------------------------------


def test_made_up_cases_that_recompute_are_caught_against_the_installed_suite(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    """A higher score whose numbers recompute: failed public cells replaced by passing ones of
    cases the suite does not have. The suite is installed here, so its cases are checked."""
    _, report = evaluated
    bad = copy.deepcopy(report)
    cases = bad["suites"][0]["cases"]
    passing = next(c for c in cases if c["split"] == "public" and c["passed"] == c["runs"])
    for index, case in enumerate(cases):
        if case["split"] == "public" and case["passed"] < case["runs"]:
            made_up = copy.deepcopy(passing)
            made_up["case_id"] = f"made-up-{index}"
            cases[index] = made_up
    bad = _consistent(store, bad)
    assert bad["summary"]["eval_score"] >= report["summary"]["eval_score"]
    error = _refused(store, tmp_path, bad)
    assert error.details["path"].startswith("$.suites[0].cases[")
    assert "no public case 'made-up-" in str(error)


def test_a_flipped_verdict_that_recomputes_is_caught_by_grading_again(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    """A failed public cell marked passed, its checks marked passed and every number made to
    agree: the installed suite's checks, run again on the output the report carries, fail it."""
    _, report = evaluated
    bad = copy.deepcopy(report)
    cases = bad["suites"][0]["cases"]
    index, case = next(
        (i, c)
        for i, c in enumerate(cases)
        if c["split"] == "public" and c["cells"][0]["outcome"] == "ok" and not c["passed"]
    )
    cell = case["cells"][0]
    cell["passed"] = True
    for check in cell["checks"]:
        check["passed"] = True
    bad = _consistent(store, bad)
    error = _refused(store, tmp_path, bad)
    assert error.details["path"] == f"$.suites[0].cases[{index}].cells[0].passed"
    assert "graded again" in str(error)


def test_an_import_is_kept_and_read_back_on_every_backend(store_url: str, tmp_path: Path) -> None:
    with contextlib.closing(open_store(store_url, secret_key=new_key(), auto_upgrade=True)) as db:
        setup(db, tmp_path)
        original = run_eval(db, tmp_path / "home")
        report = loads(render_json(build_report(db, original, audience="operator")))
        assert isinstance(report, dict)
        imported = _import(db, tmp_path, report)
        again = build_report(db, imported, audience="operator")
        assert loads(render_json(again))["suites"] == report["suites"]
        assert compare_evals(db, original, imported, audience="operator")["matched"] is True
        assert [r.eval_id for r in db.evals.record_history(AGENT_ID)] == [original]


def test_a_report_from_another_store_is_checked_as_far_as_it_can_be(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    """Store B has the same suite (so the same digest) and the same agent, but another holdout
    secret: the public cases and their grades are checked, the holdout's digests cannot be.
    B's own eval compares matched with the import; B's agent still has only B's record."""
    _, report = evaluated
    with contextlib.closing(
        open_store(f"sqlite:///{tmp_path / 'b.db'}", secret_key=new_key(), auto_upgrade=True)
    ) as other:
        setup(other, tmp_path / "b")
        assert other.evals.current_record(AGENT_ID) is None
        imported = _import(other, tmp_path / "b", report)
        info = load_eval(other, imported).info
        assert info.origin is not None
        assert info.origin["checked"][0]["cases"] == (
            "public cases match the installed suite; holdout digests keyed under another "
            "store's secret: not checked"
        )
        # Importing wrote no record: a mandate on B finds none for the agent.
        assert other.evals.current_record(AGENT_ID) is None
        assert other.evals.record_history(AGENT_ID) == []
        local = run_eval(other, tmp_path / "b" / "home")
        comparison = compare_evals(other, local, imported, audience="operator")
        assert comparison["matched"] is True
        (suite,) = comparison["suites"]
        # Holdout case digests are keyed per store: those cells cannot pair.
        assert suite["splits"]["holdout"]["paired"]["cells"] == 0
        assert suite["splits"]["public"]["paired"]["cases"] > 0
        record = other.evals.current_record(AGENT_ID)
        assert record is not None and record.eval_id == local


def test_an_output_carried_cut_is_not_graded_again(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    """The limit of grading again (docs/evals.md): a report shows a long string cut, so a cell
    whose output carries a cut note is taken at the report's word."""
    _, report = evaluated
    bad = copy.deepcopy(report)
    cases = bad["suites"][0]["cases"]
    case = next(
        c
        for c in cases
        if c["split"] == "public" and c["cells"][0]["outcome"] == "ok" and not c["passed"]
    )
    cell = case["cells"][0]
    cell["output"] = {"label": "x… [900 characters in all, sha256 0123456789abcdef]"}
    cell["passed"] = True
    for check in cell["checks"]:
        check["passed"] = True
    assert _import(store, tmp_path, _consistent(store, bad))


HOSTILE = (None, -1, 10**400, Decimal("1E+4000"), "x" * 5000, "\u202e", [], {}, True, 0.5)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _leaves(v, (*path, k))] + [path]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _leaves(v, (*path, i))] + [path]
    return [path]


@pytest.mark.slow
def test_a_mutated_report_is_refused_or_imported_never_an_internal_error(
    store: Store, tmp_path: Path, evaluated: tuple[str, Report]
) -> None:
    """The trust boundary: any value at any place of a report (a seeded sample) is refused
    with a location, or is one the import accepts; no other exception, ever."""
    _, report = evaluated
    chooser = random.Random(15)
    places = [p for p in _leaves(report) if p]
    tried = refused = 0
    for path in chooser.sample(places, min(250, len(places))):
        bad = copy.deepcopy(report)
        _set(path, chooser.choice(HOSTILE))(bad)
        tried += 1
        try:
            _import(store, tmp_path, bad)
        except (InputError, UsageError) as error:
            refused += 1
            assert error.exit_code == 2 and error.http_status in (400, 413, 422)
    assert tried == 250 and refused >= 180, refused  # 225 when written
