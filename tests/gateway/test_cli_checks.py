"""`holon path` and `holon checks grade` through the CLI: output, --json, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.gateway._cli import CLI

DOC = {
    "output": {"items": [{"sku": "A-1", "qty": 2}, {"sku": "B-2", "qty": 1.0}]},
    "expected": {"skus": ["A-1", "B-3"]},
}


def _files(tmp_path: Path, checks: str) -> tuple[str, str]:
    (tmp_path / "doc.json").write_text(json.dumps(DOC))
    (tmp_path / "checks.yaml").write_text(checks)
    return str(tmp_path / "checks.yaml"), str(tmp_path / "doc.json")


def test_path_prints_normalized_paths(cli: CLI, tmp_path: Path) -> None:
    _, doc = _files(tmp_path, "[]")
    res = cli("path", "$.output.items[*].sku", doc)
    assert res.code == 0
    assert res.stdout.splitlines() == [
        "$['output']['items'][0]['sku'] = \"A-1\"",
        "$['output']['items'][1]['sku'] = \"B-2\"",
    ]
    as_json = cli("path", "$..qty", doc, "--json")
    assert as_json.json() == [
        {"path": "$['output']['items'][0]['qty']", "value": 2},
        {"path": "$['output']['items'][1]['qty']", "value": 1.0},
    ]


def test_an_invalid_query_exits_2_with_a_caret(cli: CLI, tmp_path: Path) -> None:
    _, doc = _files(tmp_path, "[]")
    res = cli("path", "$.items[?@.sku ==]", doc)
    assert res.code == 2
    lines = res.stderr.splitlines()
    query_line = next(line for line in lines if "$.items[?@.sku ==]" in line)
    caret_line = lines[lines.index(query_line) + 1]
    assert caret_line.index("^") == query_line.index("]")


def test_grade_exit_codes_and_block_rendering(cli: CLI, tmp_path: Path) -> None:
    checks, doc = _files(
        tmp_path,
        '- {name: skus, path: "$.output.items[*].sku", contains_only: {path: $.expected.skus}}\n'
        "- {path: $.output.items, length: 2}\n",
    )
    res = cli("checks", "grade", checks, doc)
    assert res.code == 1
    assert "FAIL contains_only skus (checks.yaml:1)" in res.stdout
    assert "  extra:    $['output']['items'][1]['sku'] = \"B-2\"" in res.stdout
    assert "PASS length $.output.items (checks.yaml:2)" in res.stdout
    body = cli("checks", "grade", checks, doc, "--json").json()
    assert body["passed"] is False and body["summary"] == {"checks": 2, "passed": 1, "failed": 1}
    passing, _ = _files(tmp_path, "- {path: '$.output.items[0].qty', equals: 2.0}\n")
    assert cli("checks", "grade", passing, doc).code == 0


def test_invalid_checks_exit_2_with_suggestions(cli: CLI, tmp_path: Path) -> None:
    checks, doc = _files(tmp_path, "- {path: $.output, equalz: 1}\n")
    res = cli("checks", "grade", checks, doc, "--json")
    assert res.code == 2
    error = res.json()["error"]
    assert error["code"] == "invalid_check"
    assert "did you mean 'equals'" in error["message"]
    assert error["details"]["line"] == 1
