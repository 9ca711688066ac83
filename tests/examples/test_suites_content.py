"""The shipped suites (examples/suites/): valid, self-contained, and fair to the example agents.

Each suite loads strictly; its schemas are the capability contracts, copied;
every case line is a valid case; every input (fixtures expanded) matches the
input schema and every expectation is itself a valid answer. The checks
accept a perfect answer and refuse a wrong one. Then each example agent runs
in-process over every public case and a sample of the holdout, and its pass
rate must land in a band: most cases, not all. A split where an example agent
is known to fall short (KNOWN_SHORTFALLS) must stay under the band and is
reported as xfail, so the shortfall stays visible and a fix turns the test
red until its entry is removed.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agents import CallLimits, Executor, load_manifest
from evals.checks import PdfPool, grade, open_pdf_pool
from evals.fixtures import FixtureCache, expand, fixture_specs
from evals.suites import Case, Suite, generated_holdout, load_suite
from schema import load_schema, make_validator, validator
from schema.jsontext import dumps, loads

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "examples" / "suites"
AGENTS = ROOT / "examples" / "agents"
HOLDOUT_SECRET = b"tests/examples/test_suites_content.py"
CASE_KEYS = {"id", "input", "expected", "tags", "checks"}


@dataclass(frozen=True)
class Shipped:
    suite: str
    capability: str
    agent: str  # manifest file in examples/agents/
    holdout_sample: int  # holdout cases the agent runs on (all public cases run)
    version: int = 1


SHIPPED = (
    Shipped("invoice-extract", "invoice.extract", "acme-invoice-reader.yaml", 12),
    Shipped("ticket-classify", "ticket.classify", "acme-ticket-triage.yaml", 60),
    Shipped("report-render", "report.render", "acme-report-writer.yaml", 14, version=2),
)
BY_NAME = {shipped.suite: shipped for shipped in SHIPPED}

# "Most but not all": an example agent that passes everything means the suite
# is too easy; one under the floor means it grades something the agent
# cannot do at all.
BAND = (Decimal("0.6"), Decimal(1))

# Where an example agent falls short today (docs/suites.md): the rate must stay
# under the band (then the test reports xfail); a fix fails the test until the
# entry goes.
KNOWN_SHORTFALLS: dict[tuple[str, str], str] = {}


@pytest.fixture(scope="module")
def suites() -> dict[str, Suite]:
    return {shipped.suite: load_suite(SUITES / shipped.suite) for shipped in SHIPPED}


@pytest.fixture(scope="module")
def pdf_pool() -> Iterator[PdfPool]:
    with open_pdf_pool() as pool:
        yield pool


# -- fixture references ------------------------------------------------------------


class _Expander:
    """Fixture references (`$fixture`, `$truth`) replaced by generated values, each made once."""

    def __init__(self, suite: Suite) -> None:
        self.specs = fixture_specs(suite.document.get("fixtures"))
        self.cache = FixtureCache()

    def __call__(self, node: Any) -> Any:
        return expand(node, self.specs, self.cache)


def _holdout(suite: Suite, limit: int | None = None) -> tuple[Case, ...]:
    cases = suite.holdout_file
    if cases is None:
        cases = generated_holdout(suite, HOLDOUT_SECRET, 0)
    return cases if limit is None else cases[:limit]


def _document(case: Case, output: Any, expander: _Expander, usage: Any = None) -> dict[str, Any]:
    return {
        "input": expander(case.input),
        "output": output,
        "expected": expander(case.expected),
        "usage": usage or {},
        "case": {"id": case.id, "split": case.split, "tags": list(case.tags)},
    }


# -- the documents -----------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_suite_document(name: str, suites: dict[str, Suite]) -> None:
    shipped, suite = BY_NAME[name], suites[name]
    assert (suite.id, suite.version, suite.capability) == (
        name,
        shipped.version,
        shipped.capability,
    )
    assert suite.document["schema_version"] == 1
    assert suite.repetitions == 1 and suite.grace_days == 14
    assert suite.overfit_delta == Decimal("0.15")
    assert Decimal("0.5") <= suite.threshold < 1
    assert isinstance(suite.document["limits"]["max_cost_usd"], str)
    assert len(suite.public) >= 30
    assert suite.holdout_count >= 40
    assert [check.name for check in suite.checks][0] == "output schema"
    # validated again here, independently of the loader
    assert not list(validator("suite").iter_errors(suite.document))


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_schemas_are_copies_of_the_capability_contracts(name: str) -> None:
    capability = BY_NAME[name].capability
    for side in ("input", "output"):
        copied = json.loads((SUITES / name / "schemas" / f"{side}.json").read_text())
        assert copied == load_schema(f"capabilities/{capability}.{side}")


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_suite_directory_is_self_contained(name: str) -> None:
    """Nothing in a suite directory points outside it (docs/suites.md, "Layout": self-contained)."""
    for path in (SUITES / name).rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert "../" not in text, path
            for ref in _refs(loads(text) if path.suffix == ".json" else None):
                assert ref.startswith("#"), (path, ref)


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _case_files(name: str) -> list[Path]:
    return sorted((SUITES / name / "cases").glob("*.jsonl"))


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_case_lines_are_strict(name: str) -> None:
    case_schema = validator("case")
    ids: set[str] = set()
    for path in _case_files(name):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            where = f"{path.name}:{number}"
            raw = loads(line)  # Decimal numbers; NaN/Infinity are refused here
            assert set(raw) <= CASE_KEYS and {"id", "input", "expected"} <= set(raw), where
            assert not list(case_schema.iter_errors(json.loads(line))), where
            assert raw["id"] not in ids, f"{where}: duplicate id {raw['id']}"
            ids.add(raw["id"])
            assert len(dumps(raw["input"])) <= 20_000, where
            tags = raw.get("tags", [])
            assert len(tags) <= 20 and all(0 < len(tag) <= 60 for tag in tags), where


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_inputs_and_expectations_match_the_contracts(name: str, suites: dict[str, Suite]) -> None:
    """Inputs (fixtures expanded) are valid inputs; an expectation that is an answer is valid."""
    suite = suites[name]
    expander = _Expander(suite)
    inputs = make_validator(suite.input_schema)
    outputs = make_validator(suite.output_schema)
    for case in (*suite.public, *_holdout(suite, 20)):
        value = expander(case.input)
        assert not list(inputs.iter_errors(value)), case.id
        if name != "report-render":  # there the expectation is page bounds, not an answer
            assert not list(outputs.iter_errors(expander(case.expected))), case.id


# -- the checks --------------------------------------------------------------------


@pytest.mark.parametrize("name", ["invoice-extract", "ticket-classify"])
def test_a_perfect_answer_passes_and_a_wrong_one_fails(name: str, suites: dict[str, Suite]) -> None:
    suite = suites[name]
    expander = _Expander(suite)
    for case in (*suite.public, *_holdout(suite, 10)):
        truth = expander(case.expected)
        result = grade(case.checks, _document(case, truth, expander))
        failed = [(r.name, r.detail) for r in result.results if not r.passed]
        assert result.passed, (case.id, failed)
    case = suite.public[0]
    wrong = copy.deepcopy(expander(case.expected))
    if name == "invoice-extract":
        wrong["total"] += Decimal("0.02")
        wrong["line_items"] = wrong["line_items"][1:]
        broken = {"total", "line item SKUs", "line items"}
    else:
        wrong["label"] = "other" if wrong["label"] != "other" else "bug"
        broken = {"label"}
    result = grade(case.checks, _document(case, wrong, expander))
    assert {r.name for r in result.results if not r.passed} == broken


def test_report_checks_refuse_another_reports_pdf(
    suites: dict[str, Suite], pdf_pool: PdfPool
) -> None:
    """The report checks read the PDF: a real report for other data fails them."""
    suite = suites["report-render"]
    expander = _Expander(suite)
    first, other = suite.public[0], suite.public[7]
    outcomes = asyncio.run(_run(BY_NAME["report-render"], suite, [first, other], expander))
    right = grade(first.checks, _document(first, outcomes[0].output, expander), pdf=pdf_pool)
    assert right.passed, [(r.name, r.detail) for r in right.results if not r.passed]
    wrong = grade(first.checks, _document(first, outcomes[1].output, expander), pdf=pdf_pool)
    failed = {r.name for r in wrong.results if not r.passed}
    assert {"metadata title", "title shown", "metrics shown"} <= failed


# -- the example agents ------------------------------------------------------------


async def _run(shipped: Shipped, suite: Suite, cases: Any, expander: _Expander) -> list[Any]:
    manifest = load_manifest(AGENTS / shipped.agent)
    limits = CallLimits(max_cost_usd=suite.limits.max_cost_usd, timeout_s=suite.limits.timeout_s)
    async with Executor() as executor:
        return [
            await executor.execute(manifest, suite.capability, expander(case.input), limits)
            for case in cases
        ]


@pytest.mark.slow
@pytest.mark.parametrize("split", ["public", "holdout"])
@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_example_agent_passes_most_but_not_all(
    name: str, split: str, suites: dict[str, Suite], pdf_pool: PdfPool
) -> None:
    shipped, suite = BY_NAME[name], suites[name]
    expander = _Expander(suite)
    cases = suite.public if split == "public" else _holdout(suite, shipped.holdout_sample)
    outcomes = asyncio.run(_run(shipped, suite, cases, expander))
    passed = 0
    for case, outcome in zip(cases, outcomes, strict=True):
        # Within the suite's caps: an example agent never fails on cost or time.
        assert outcome.code == "ok", (case.id, outcome.code, outcome.error)
        assert outcome.cost_usd <= suite.limits.max_cost_usd
        usage = outcome.usage.to_json() if outcome.usage is not None else {}
        result = grade(case.checks, _document(case, outcome.output, expander, usage), pdf=pdf_pool)
        passed += result.passed
    rate = Decimal(passed) / len(cases)
    low, high = BAND
    shortfall = KNOWN_SHORTFALLS.get((name, split))
    if shortfall is not None:
        assert rate < low, (
            f"{name} {split}: {passed} of {len(cases)} passed, in the band now: "
            "remove the entry from KNOWN_SHORTFALLS"
        )
        pytest.xfail(f"{passed} of {len(cases)} passed: {shortfall}")
    assert low <= rate < high, f"{name} {split}: {passed} of {len(cases)} passed"
