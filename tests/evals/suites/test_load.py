"""Suite loading is strict and explains itself with file:line:col."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest

from evals.suites import OUTPUT_SCHEMA_CHECK, load_suite
from schema.errors import SuiteError
from tests.evals.suites._make import SUITE_YAML, case, make_suite

ROOT = Path(__file__).resolve().parents[3]


def test_a_valid_suite_loads(tmp_path: Path) -> None:
    suite = load_suite(make_suite(tmp_path))
    assert (suite.id, suite.version, suite.capability) == ("tiny", 1, "ticket.classify")
    assert suite.threshold == Decimal("0.8") and suite.overfit_delta == Decimal("0.15")
    assert suite.limits.max_cost_usd == Decimal("0.01")
    assert [c.id for c in suite.public] == ["p1", "p2"]
    assert suite.holdout_file is not None and len(suite.holdout_file) == 2
    # Every case is graded against the output schema first, then the suite's checks.
    assert [c.name for c in suite.public[0].checks] == [OUTPUT_SCHEMA_CHECK, "label"]


def test_the_suite_yaml_path_works_too(tmp_path: Path) -> None:
    assert load_suite(make_suite(tmp_path) / "suite.yaml").id == "tiny"


@pytest.mark.parametrize(
    ("change", "where", "what"),
    [
        (
            ("threshold: 0.8", "threshhold: 0.8"),
            "suite.yaml:9:1: $.threshhold",
            "did you mean 'threshold'",
        ),
        (("\nversion: 1\n", "\nversion: one\n"), "suite.yaml:3:1: $.version", "positive integer"),
        (("equals: {path", "equalz: {path"), "suite.yaml:11:", "did you mean 'equals'"),
        (("path: $.output.label", "path: '$.output[?'"), "suite.yaml:11:", "^"),
        (("{$ref: schemas/input.json}", "{$ref: ../input.json}"), "suite.yaml:6:", "relative path"),
        (
            ("{$ref: schemas/input.json}", "{$ref: schemas/missing.json}"),
            "missing.json",
            "no such file",
        ),
        (("cases/public.jsonl", "cases/nope.jsonl"), "nope.jsonl", "no such case file"),
    ],
)
def test_suite_document_errors(
    tmp_path: Path, change: tuple[str, str], where: str, what: str
) -> None:
    text = SUITE_YAML.replace(*change)
    assert text != SUITE_YAML
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite(tmp_path, suite_yaml=text))
    assert where in str(caught.value)
    assert what in str(caught.value)


@pytest.mark.parametrize(
    ("cases", "where", "what"),
    [
        ([case("p1"), case("p1")], ":2: $.id", "duplicate case id 'p1' (first on line 1)"),
        ([case("")], ":1: $.id", ""),
        ([{"id": "p1", "input": {"subject": "x"}}], ":1", "missing required key 'expected'"),
        ([{**case("p1"), "extra": 1}], ":1", "unknown key 'extra'"),
        ([case("p1", tags=["t"] * 2)], ":1: $.tags", "non-unique"),
        ([case("p1", tags=[f"t{i}" for i in range(21)])], ":1: $.tags", "too long"),
        ([case("p1", tags=["x" * 61])], ":1: $.tags[0]", "too long"),
        ([case("x" * 101)], ":1: $.id", "too long"),
        ([{"id": "p1", "input": {"nosubject": 1}, "expected": {}}], ":1: $.input", "input schema"),
        ([case("p1", "x" * 20_001)], ":1: $.input", "more than 20000"),
        ([case("p1", checks=[{"path": "$.x", "nope": 1}])], ":1", "unknown key 'nope'"),
        (
            [case("p1", checks=[{"name": "label", "path": "$.x", "exists": True}])],
            ":1",
            "name of a suite check",
        ),
    ],
)
def test_case_file_errors_name_the_line(
    tmp_path: Path, cases: list[object], where: str, what: str
) -> None:
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite(tmp_path, public=cases))
    assert f"public.jsonl{where}" in str(caught.value)
    assert what in str(caught.value)


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ('{"id": "p1", "input": {"subject": "x"}, "expected": NaN}\n', ":1:", "NaN"),
        ('{"id": "p1",\n', ":1:", "not a JSON object"),
        ('["not", "an", "object"]\n', ":1", "one JSON object"),
    ],
)
def test_malformed_lines(tmp_path: Path, text: str, where: str, what: str) -> None:
    good = json.dumps(case("p0")) + "\n"
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite(tmp_path, public_text=good + text))
    assert f"public.jsonl:2{where[2:]}" in str(caught.value)
    assert what in str(caught.value)


def test_a_case_with_no_checks_is_refused(tmp_path: Path) -> None:
    text = SUITE_YAML.replace(
        "checks:\n  - {name: label, path: $.output.label, equals: {path: $.expected.label}}\n", ""
    )
    # With the implicit output-schema check every case can fail; remove the
    # output schema's teeth is not possible, so the count stays >= 1.
    suite = load_suite(make_suite(tmp_path, suite_yaml=text))
    assert [c.name for c in suite.public[0].checks] == [OUTPUT_SCHEMA_CHECK]


def test_the_output_schema_check_name_is_reserved(tmp_path: Path) -> None:
    text = SUITE_YAML.replace("{name: label,", "{name: output schema,")
    with pytest.raises(SuiteError, match="reserved"):
        load_suite(make_suite(tmp_path, suite_yaml=text))


def test_public_and_holdout_ids_are_disjoint(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="in both the public and the holdout split"):
        load_suite(make_suite(tmp_path, holdout=[case("p1")]))


def test_non_local_refs_in_suite_schemas_are_refused(tmp_path: Path) -> None:
    directory = make_suite(tmp_path)
    (directory / "schemas" / "input.json").write_text(
        json.dumps({"$ref": "https://example.com/schema.json"})
    )
    with pytest.raises(SuiteError, match="only local references"):
        load_suite(directory)


def test_a_symlink_out_of_the_suite_is_refused(tmp_path: Path) -> None:
    directory = make_suite(tmp_path)
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps(case("p9")) + "\n")
    (directory / "cases" / "public.jsonl").unlink()
    (directory / "cases" / "public.jsonl").symlink_to(outside)
    with pytest.raises(SuiteError, match="outside the suite directory"):
        load_suite(directory)


def test_not_a_suite(tmp_path: Path) -> None:
    with pytest.raises(SuiteError, match="not a suite"):
        load_suite(tmp_path)


@pytest.mark.parametrize("name", ["invoice-extract", "ticket-classify", "report-render"])
def test_the_shipped_suites_load(name: str) -> None:
    suite = load_suite(ROOT / "examples" / "suites" / name)
    assert len(suite.public) >= 30
    assert suite.holdout_count >= 40


@pytest.mark.parametrize(
    ("expected", "where", "what"),
    [
        ({"label": 7}, ":1: $.expected.label", "expected a string, got 7"),
        ({}, ":1: $.expected", "missing required key 'label'"),
        ("other", ":1: $.expected", "expected an object"),
    ],
)
def test_an_expected_answer_the_output_schema_refuses_is_refused(
    tmp_path: Path, expected: object, where: str, what: str
) -> None:
    bad = {**case("p1"), "expected": expected}
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite(tmp_path, public=[bad, case("p2")]))
    message = str(caught.value)
    assert f"public.jsonl{where}: expected does not match the suite's output schema" in message
    assert what in message
    assert "expected_kind: facts" in (caught.value.hint or "")
    # The holdout's expectations are held to it too.
    with pytest.raises(SuiteError) as held:
        load_suite(make_suite(tmp_path / "h", holdout=[case("h1"), bad]))
    assert f"holdout.jsonl:2{where[2:]}" in str(held.value)


def test_expected_facts_are_not_held_to_the_output_schema(tmp_path: Path) -> None:
    facts = {**case("p1"), "expected": {"pages": {"min": 1}}}
    text = SUITE_YAML.replace("threshold: 0.8\n", "threshold: 0.8\nexpected_kind: facts\n")
    text = text.replace("equals: {path: $.expected.label}", "exists: true")
    suite = load_suite(make_suite(tmp_path, suite_yaml=text, public=[facts, case("p2")]))
    assert suite.public[0].expected == {"pages": {"min": 1}}
    wrong = SUITE_YAML.replace("threshold: 0.8\n", "threshold: 0.8\nexpected_kind: answer\n")
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite(tmp_path / "w", suite_yaml=wrong))
    assert "$.expected_kind" in str(caught.value) and "'output', 'facts'" in str(caught.value)


def test_a_fixture_truth_is_checked_once_expanded_not_at_load(tmp_path: Path) -> None:
    """A `$truth` reference is not an answer yet: the loader cannot refuse it."""
    referenced = {**case("p1"), "expected": {"label": {"$truth": "ticket", "seed": 3}}}
    text = SUITE_YAML.replace("checks:\n", "fixtures:\n  ticket: {generator: ticket}\nchecks:\n")
    suite = load_suite(make_suite(tmp_path, suite_yaml=text, public=[referenced, case("p2")]))
    assert suite.public[0].expected == {"label": {"$truth": "ticket", "seed": 3}}


@pytest.mark.parametrize(
    ("key", "what"),
    [
        ("$fixture", "$fixture refers to 'nowhere'"),
        ("\\u0024fixture", "$fixture refers to 'nowhere'"),  # the same key, escaped
        ("$tru\\u0074h", "$truth refers to 'nowhere'"),
    ],
)
def test_a_reference_is_checked_however_its_key_is_written(
    tmp_path: Path, key: str, what: str
) -> None:
    """Loading skips the reference walk for a line that shows no reference key; a key
    spelled with a JSON escape is the same key and is found."""
    good = json.dumps(case("p0")) + "\n"
    line = json.dumps({**case("p1"), "input": {"subject": "x", "attachment": {"KEY": "nowhere"}}})
    text = good + line.replace('"KEY"', f'"{key}"') + "\n"
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite(tmp_path, public_text=text))
    assert "public.jsonl:2" in str(caught.value)
    assert what in str(caught.value)


def test_a_lone_surrogate_behind_an_escape_is_refused(tmp_path: Path) -> None:
    good = json.dumps(case("p0")) + "\n"
    line = json.dumps(case("p1", "x")).replace('"x"', '"a\\ud800b"')
    with pytest.raises(SuiteError) as caught:
        load_suite(make_suite(tmp_path, public_text=good + line + "\n"))
    assert "public.jsonl:2" in str(caught.value)
    assert "lone UTF-16 surrogate" in str(caught.value)
