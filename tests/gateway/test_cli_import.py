"""`holon evals import` through the CLI: a real eval exported, imported, listed, shown, compared;
a tampered file refused with its path; exit codes as everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from schema.jsontext import dumps, loads
from tests.evals.reports._setup import suite_dir, write_manifest
from tests.gateway._cli import CLI
from tests.gateway.test_cli_gateway import world


def _exported(cli: CLI, tmp_path: Path) -> tuple[str, Path]:
    assert cli("suites", "add", str(suite_dir(tmp_path / "src"))).code == 0
    assert cli("agents", "register", str(write_manifest(tmp_path))).code == 0
    ran = cli("eval", "test/echo", "--yes", "--json")
    assert ran.code in (0, 1), ran.stderr
    eval_id: str = ran.json()["eval"]["id"]
    target = tmp_path / "report.json"
    exported = cli(
        "evals", "report", eval_id, "--format", "json", "--audience", "operator", "-o", str(target)
    )
    assert exported.code == 0, exported.stderr
    return eval_id, target


def test_import_list_status_report_and_compare(cli: CLI, tmp_path: Path) -> None:
    original, path = _exported(cli, tmp_path)
    done = cli("evals", "import", str(path))
    assert done.code == 0, done.stderr
    assert f"imported {original} as ev_" in done.stdout and "no record was written" in done.stdout
    assert "public cases match the installed suite" in done.stdout
    as_json = cli("evals", "import", str(path), "--source", "gateway A", "--json")
    view = as_json.json()
    imported = view["id"]
    assert view["imported"]["origin"]["source"] == "gateway A"
    assert view["imported"]["imported_by"].startswith("cli:")

    listed = cli("evals", "list")
    line = next(row for row in listed.stdout.splitlines() if imported in row)
    assert "done (imported)" in line
    status = cli("evals", "status", imported)
    assert status.code == 0 and "imported" in status.stdout and original in status.stdout
    report = cli("evals", "report", imported)
    assert report.code == 0 and f"eval {original} run elsewhere" in report.stdout
    compared = cli("evals", "compare", original, imported, "--json")
    assert compared.code == 0 and compared.json()["matched"] is True

    for action in ("resume", "cancel"):
        refused = cli("evals", action, imported)
        assert refused.code == 2 and "is imported" in refused.stderr, refused.stderr


def test_a_tampered_file_is_refused_with_its_path(cli: CLI, tmp_path: Path) -> None:
    _, path = _exported(cli, tmp_path)
    report = loads(path.read_text())
    assert isinstance(report, dict)
    report["suites"][0]["splits"]["holdout"]["rate"] = 1
    bad = tmp_path / "bad.json"
    bad.write_text(dumps(report))
    res = cli("evals", "import", str(bad), "--json")
    assert res.code == 2
    error = res.json()["error"]
    assert error["code"] == "invalid_report"
    assert error["details"]["path"] == "$.suites[0].splits.holdout.rate"
    assert error["details"]["file"] == str(bad)
    text = cli("evals", "import", str(bad))
    assert f"{bad}: $.suites[0].splits.holdout.rate: the report does not recompute" in text.stderr
    missing = cli("evals", "import", str(tmp_path / "nope.json"))
    assert missing.code == 2 and "no such file" in missing.stderr


@pytest.mark.slow
def test_import_through_the_gateway(tmp_path: Path) -> None:
    """`--gateway`: the file is sent as it is, checked by the gateway, refused the same way."""
    with world(tmp_path) as w:
        ran = w.store("eval", "acme/ticket-triage", "--yes", "--json")
        original = ran.json()["eval"]["id"]
        path = tmp_path / "report.json"
        exported = w.store(
            "evals",
            "report",
            original,
            "--format",
            "json",
            "--audience",
            "operator",
            "-o",
            str(path),
        )
        assert exported.code == 0, exported.stderr
        done = w.via("operator")("evals", "import", str(path), "--json")
        assert done.code == 0, done.stderr
        view = done.json()
        assert view["imported"]["origin"] == {
            **view["imported"]["origin"],
            "eval_id": original,
            "source": "report.json",
        }
        assert not view["imported"]["imported_by"].startswith("cli:")  # the token's id
        compared = w.via("operator")("evals", "compare", original, view["id"], "--json")
        assert compared.code == 0 and compared.json()["matched"] is True
        assert w.via("org:acme")("evals", "import", str(path)).code == 2

        report = loads(path.read_text())
        assert isinstance(report, dict)
        report["summary"]["eval_score"] = 1
        bad = tmp_path / "bad.json"
        bad.write_text(dumps(report))
        refused = w.via("operator")("evals", "import", str(bad), "--json")
        assert refused.code == 2
        assert refused.json()["error"]["details"]["path"] == "$.summary.eval_score"
