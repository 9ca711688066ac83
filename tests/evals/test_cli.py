"""`holon path` and `holon checks grade`, as the functions the CLI layer wires."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from evals.checks import GradeReport, cli_grade, cli_path, render_nodes
from schema import jsontext
from schema.errors import CheckError, InputError

DOCUMENT = (
    '{"input": {"text": "x"}, "output": {"total": 1234.00, "items": [{"sku": "A"}, {"sku": "B"}]},'
    ' "expected": {"total": 1234.50}, "usage": {}, "case": {"id": "c1", "split": "public",'
    ' "tags": []}}'
)


@pytest.fixture
def document(tmp_path: Path) -> Path:
    path = tmp_path / "doc.json"
    path.write_text(DOCUMENT)
    return path


def test_path_lists_nodes_with_normalized_paths(document: Path) -> None:
    nodes = cli_path("$.output.items[*].sku", document)
    assert nodes == [
        {"path": "$['output']['items'][0]['sku']", "value": "A"},
        {"path": "$['output']['items'][1]['sku']", "value": "B"},
    ]
    total = cli_path("$.output.total", document)
    assert total == [{"path": "$['output']['total']", "value": Decimal("1234.00")}]
    assert jsontext.dumps(total) == '[{"path":"$[\'output\'][\'total\']","value":1234.00}]'
    assert render_nodes(total) == ["$['output']['total'] = 1234.00"]
    assert render_nodes(cli_path("$.nothing", document)) == ["no nodes matched"]


def test_path_reads_yaml_too(tmp_path: Path) -> None:
    path = tmp_path / "doc.yaml"
    path.write_text("output:\n  total: 12.50\n")
    assert cli_path("$..total", path) == [
        {"path": "$['output']['total']", "value": Decimal("12.50")}
    ]


def test_a_bad_query_exits_2_with_a_caret(document: Path) -> None:
    with pytest.raises(CheckError) as caught:
        cli_path("$.output[?@.x ==]", document)
    assert caught.value.exit_code == 2
    assert caught.value.message.splitlines()[1:] == [
        "    $.output[?@.x ==]",
        "                    ^",
    ]
    body = caught.value.to_body()
    assert body["error"]["code"] == "invalid_check"
    assert body["error"]["details"]["query"] == "$.output[?@.x ==]"


def test_bad_files_are_input_errors(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"output": [1, 2,]}')
    with pytest.raises(InputError) as caught:
        cli_path("$", broken)
    assert str(caught.value).startswith(f"{broken}:1:18: not valid JSON: ")
    with pytest.raises(InputError, match="no such file"):
        cli_path("$", tmp_path / "missing.json")
    huge = tmp_path / "huge.json"
    huge.write_text('{"output": {"total": 1e10000000}}')
    with pytest.raises(InputError) as caught:
        cli_path("$", huge)
    assert str(caught.value).startswith(f"{huge}: $.output.total: the number 1e10000000 is out")


def test_grade_exit_codes_and_output(tmp_path: Path, document: Path) -> None:
    checks = tmp_path / "checks.yaml"
    checks.write_text(
        "- {name: total, path: $.output.total, approx: {path: $.expected.total}, abs: 0.01}\n"
        "- {path: '$.output.items[*].sku', contains_only: [A, B]}\n"
    )
    report = cli_grade(checks, document)
    assert isinstance(report, GradeReport)
    assert report.exit_code == 1 and not report.passed
    assert report.lines() == [
        "FAIL approx total (checks.yaml:1)",
        "  path:     $.output.total",
        "  expected: 1234.50",
        "  actual:   1234.00",
        "  detail:   expected ≈ 1234.50 (±0.01), got 1234.00",
        "PASS contains_only $.output.items[*].sku (checks.yaml:2)",
        "",
        "FAIL: 1 of 2 checks passed",
    ]
    data = report.to_json()
    assert data["passed"] is False
    assert data["summary"] == {"checks": 2, "passed": 1, "failed": 1}
    assert [r["status"] for r in data["results"]] == ["fail", "pass"]
    checks.write_text('[{"path": "$.output.total", "gt": 1000}]')
    assert cli_grade(checks, document).exit_code == 0


def test_invalid_checks_exit_2_with_the_place(tmp_path: Path, document: Path) -> None:
    checks = tmp_path / "checks.yaml"
    checks.write_text("- {path: $.output.total, gt: 1}\n- {path: $.output.total, aprox: 1}\n")
    with pytest.raises(CheckError) as caught:
        cli_grade(checks, document)
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith(f"{checks}:2:26: $[1].aprox: unknown key 'aprox'; ")
    checks.write_text("[]")
    with pytest.raises(CheckError, match="no checks"):
        cli_grade(checks, document)


def test_the_graded_document_must_look_like_one(tmp_path: Path) -> None:
    checks = tmp_path / "checks.yaml"
    checks.write_text("- {path: $.output, exists: true}\n")
    raw = tmp_path / "raw.json"
    raw.write_text('{"outputs": {}}')
    with pytest.raises(InputError, match="unknown key 'outputs'; a graded document has case"):
        cli_grade(checks, raw)
    raw.write_text("[1]")
    with pytest.raises(InputError, match="a graded document is an object"):
        cli_grade(checks, raw)
