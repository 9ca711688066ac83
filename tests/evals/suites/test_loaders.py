"""Trusted case loaders: a split's cases from Python, trusted, validated, pinned at install."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evals.reports._data import _case_inputs
from evals.suites import TrustStore, load_installed, load_suite, public_files, suite_digests
from records import Store, open_store
from schema import parse_document
from schema.errors import SuiteError
from tests.evals.suites._make import SUITE_YAML, make_suite
from tests.gateway._cli import CLI, TRIAGE

# The triage example answers "Cannot log in" with account and "Refund please" with billing.
PUBLIC_LOADER = """
def load():
    return [
        {
            "id": f"p{i}",
            "input": {"subject": f"Cannot log in {i}", "body": f"Cannot log in {i}. Thanks."},
            "expected": {"label": "account"},
        }
        for i in range(3)
    ]
"""

# Reads its data from outside the suite, so a test can change what it would return.
HOLDOUT_LOADER = """
import json, pathlib

def load():
    return json.loads(pathlib.Path({data!r}).read_text())
"""

WITH_LOADERS = SUITE_YAML.replace(
    "public: {file: cases/public.jsonl}\nholdout: {file: cases/holdout.jsonl}\n",
    "extensions:\n"
    "  loaders: {public_cases: ext/public_loader.py, secret_cases: ext/holdout_loader.py}\n"
    "public: {loader: public_cases}\n"
    "holdout: {loader: secret_cases}\n",
)


def _holdout(n: int = 2, subject: str = "Refund please") -> list[dict[str, Any]]:
    return [
        {
            "id": f"h{i}",
            "input": {"subject": f"{subject} {i}", "body": f"{subject} {i}. Thanks."},
            "expected": {"label": "billing"},
        }
        for i in range(n)
    ]


def _suite(tmp_path: Path, *, public_loader: str = PUBLIC_LOADER) -> Path:
    directory = make_suite(tmp_path, suite_yaml=WITH_LOADERS)
    # No case files: a loader's split needs none.
    for name in ("public.jsonl", "holdout.jsonl"):
        (directory / "cases" / name).unlink()
    data = tmp_path / "holdout-data.json"
    data.write_text(json.dumps(_holdout()))
    (directory / "ext").mkdir()
    (directory / "ext" / "public_loader.py").write_text(public_loader)
    (directory / "ext" / "holdout_loader.py").write_text(HOLDOUT_LOADER.format(data=str(data)))
    return directory


@contextmanager
def _store(home: Path) -> Iterator[Store]:
    store = open_store(
        f"sqlite:///{home / 'holon.db'}", secret_key=(home / "secret.key").read_bytes()
    )
    try:
        yield store
    finally:
        store.close()


def _trusted(tmp_path: Path, directory: Path) -> Any:
    assert CLI(tmp_path / "home")("suites", "trust", str(directory)).code == 0
    return TrustStore(tmp_path / "home").trusted


def _load(tmp_path: Path, directory: Path) -> Any:
    return load_suite(directory, trusted=_trusted(tmp_path, directory))


def test_loaded_cases_are_the_splits(tmp_path: Path) -> None:
    suite = _load(tmp_path, _suite(tmp_path))
    assert [c.id for c in suite.public] == ["p0", "p1", "p2"]
    assert [c.id for c in suite.holdout_file] == ["h0", "h1"]
    assert {c.split for c in suite.holdout_file} == {"holdout"}
    assert suite.loaders["holdout"]["name"] == "secret_cases"


@pytest.mark.slow
def test_a_trusted_loader_installs_pinned_and_evaluates(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    cli = CLI(tmp_path / "home")
    refused = cli("suites", "add", str(directory))
    assert refused.code == 2 and "is not trusted" in refused.stderr
    assert "holon suites trust" in refused.stderr and "Traceback" not in refused.stderr
    assert cli("suites", "trust", str(directory)).code == 0
    assert cli("suites", "add", str(directory)).code == 0
    validated = cli("suites", "validate", "tiny", "--json").json()
    assert validated["public"] == {"cases": 3} and validated["holdout"] == {"cases": 2}
    # What the loader would return now does not change the installed suite.
    (tmp_path / "holdout-data.json").write_text(json.dumps(_holdout(5, "Changed")))
    again = cli("suites", "validate", "tiny", "--json").json()
    assert again["digests"] == validated["digests"] and again["holdout"] == {"cases": 2}
    with _store(tmp_path / "home") as store:
        installed = load_installed(store, "tiny", tmp_path / "home")
    assert [c.input["subject"] for c in installed.holdout_file] == [
        "Refund please 0",
        "Refund please 1",
    ]
    assert cli("agents", "register", str(TRIAGE)).code == 0
    ran = cli("eval", "acme/ticket-triage", "--yes", "--json")
    assert ran.code == 0, ran.stderr
    assert ran.json()["plan"]["cells"] == 5 and ran.json()["eval"]["meets_thresholds"]


def test_what_a_loader_prints_goes_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `holon … --json` writes one JSON document to stdout: a loader's progress must not mix in.
    printing = PUBLIC_LOADER.replace("def load():\n", "def load():\n    print('loading')\n")
    suite = _load(tmp_path, _suite(tmp_path, public_loader=printing))
    assert len(suite.public) == 3
    captured = capsys.readouterr()
    assert "loading" not in captured.out and "loading" in captured.err


def test_holdout_cases_from_a_loader_are_never_public(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    # Cases planted where an install keeps loaded ones are not installed: the loader's are.
    (directory / ".loaded").mkdir()
    (directory / ".loaded" / "holdout.jsonl").write_text(json.dumps(_holdout(1, "Planted")))
    cli = CLI(tmp_path / "home")
    cli("suites", "trust", str(directory))
    assert cli("suites", "add", str(directory)).code == 0
    with _store(tmp_path / "home") as store:
        stored = store.suites.files("tiny", 1)
        files = public_files(load_installed(store, "tiny", tmp_path / "home"))
    assert "Refund please" in stored[".loaded/holdout.jsonl"]  # the operator's copy
    assert not any("Planted" in text for text in stored.values())
    # The operator's report reads each case's input from there.
    inputs = _case_inputs(stored, parse_document(stored["suite.yaml"], "suite.yaml").value)
    assert inputs[("holdout", "h1")]["subject"] == "Refund please 1"
    assert inputs[("public", "p0")]["subject"] == "Cannot log in 0"
    assert "ext/holdout_loader.py" not in files and not any(f.startswith(".") for f in files)
    assert "holdout" not in files["suite.yaml"] and "secret_cases" not in files["suite.yaml"]
    assert not any("Refund please" in text for text in files.values())
    pulled = cli("suites", "pull", "tiny", "-o", str(tmp_path / "pulled"))
    assert pulled.code == 0, pulled.stderr
    for path in (tmp_path / "pulled").rglob("*"):
        assert path.is_dir() or "Refund please" not in path.read_text()
        assert "holdout_loader" not in path.name and ".loaded" not in path.parts
    # The pulled suite is a whole one: its public loader, once trusted, loads.
    practice = load_suite(tmp_path / "pulled", trusted=_trusted(tmp_path, tmp_path / "pulled"))
    assert len(practice.public) == 3 and practice.holdout_file is None


def test_a_loader_changed_after_trust_is_refused(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    cli = CLI(tmp_path / "home")
    cli("suites", "trust", str(directory))
    (directory / "ext" / "public_loader.py").write_text(PUBLIC_LOADER + "# changed\n")
    refused = cli("suites", "add", str(directory))
    assert refused.code == 2 and "public_loader.py' (sha256" in refused.stderr
    assert "is not trusted" in refused.stderr and "holon suites trust" in refused.stderr


def test_the_digest_covers_the_loaders_code_and_output(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    before = suite_digests(_load(tmp_path, directory))
    (directory / "ext" / "public_loader.py").write_text(PUBLIC_LOADER + "# the same cases\n")
    code = suite_digests(_load(tmp_path, directory))
    assert code.dataset != before.dataset and code.checks != before.checks
    (tmp_path / "holdout-data.json").write_text(json.dumps(_holdout(3)))
    output = suite_digests(_load(tmp_path, directory))
    assert output.dataset != code.dataset and output.checks == code.checks


@pytest.mark.parametrize(
    ("returned", "message", "path"),
    [
        (
            '[{"id": "p0", "input": {"subject": 1}, "expected": {"label": "x"}}]',
            "loader 'public_cases' case 0: input does not match the suite's input schema",
            "$[0].input.subject",
        ),
        ('[{"id": "p0", "input": {"subject": "s"}}]', "invalid case", "$[0]"),
        ('[{"id": "p0"}, 7]', "each case is a dict, got int", "$[1]"),
        (
            '[{"id": "p0", "input": {1, 2}}]',
            "loader 'public_cases' case 0: not JSON: set is not JSON",
            "$[0]",
        ),
        ('[{"id": "x", "input": {"subject": "\\ud800"}, "expected": {}}]', "surrogate", "$[0]"),
    ],
)
def test_a_bad_case_from_a_loader_is_located(
    tmp_path: Path, returned: str, message: str, path: str
) -> None:
    directory = _suite(tmp_path, public_loader=f"def load():\n    return {returned}\n")
    with pytest.raises(SuiteError, match=message.replace("(", r"\(")) as caught:
        _load(tmp_path, directory)
    where = caught.value.location
    assert where.file == "ext/public_loader.py" and (where.path or "$[0]").startswith(path)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("    return 1 / 0", "loader 'public_cases' (ext/public_loader.py) failed: ZeroDivision"),
        ("    raise SystemExit(3)", "failed: SystemExit: 3"),
        ("    return {'id': 'p0'}", "returned dict, not a list of cases"),
        ("    return [{}] * 5001", "returned 5001 cases, more than 5000 in one split"),
        ("    x = []\n    x.append(x)\n    return [{'id': 'p', 'input': x}]", "nests too deeply"),
    ],
)
def test_a_failing_loader_is_a_clean_located_error(tmp_path: Path, body: str, message: str) -> None:
    directory = _suite(tmp_path, public_loader=f"def load():\n{body}\n")
    _trusted(tmp_path, directory)
    res = CLI(tmp_path / "home")("suites", "validate", str(directory), "--json")
    assert res.code == 2 and "Traceback" not in res.stderr
    error = res.json()["error"]
    assert message in error["message"]
    if "failed" in message or "returned" in message:  # located at the suite's `loader:`
        assert error["details"]["file"].endswith("suite.yaml") and error["details"]["line"] == 14


def test_a_loader_must_be_declared_define_load_and_serve_one_split(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    suite_yaml = directory / "suite.yaml"
    text = suite_yaml.read_text()
    suite_yaml.write_text(text.replace("holdout: {loader: secret_cases}", "holdout: {loader: x}"))
    with pytest.raises(SuiteError, match="no loader named 'x' under extensions.loaders"):
        _load(tmp_path, directory)
    suite_yaml.write_text(
        text.replace("holdout_loader.py}", "public_loader.py}").replace(
            "holdout: {loader: secret_cases}", "holdout: {loader: secret_cases}"
        )
    )
    with pytest.raises(SuiteError, match="loads the public split already"):
        _load(tmp_path, directory)
    suite_yaml.write_text(text)
    (directory / "ext" / "public_loader.py").write_text("cases = []\n")
    with pytest.raises(SuiteError, match="defines no function load"):
        _load(tmp_path, directory)
    suite_yaml.write_text(text.replace("{loader: public_cases}", "{loader: public_cases, file: a}"))
    with pytest.raises(SuiteError, match="public"):
        _load(tmp_path, directory)


def test_the_catalog_lists_loaders(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    cli = CLI(tmp_path / "home")
    cli("suites", "trust", str(directory))
    assert cli("suites", "add", str(directory)).code == 0
    items = cli("catalog", "--json").json()["extensions"]["items"]
    assert [(i["kind"], i["name"], i["file"]) for i in items] == [
        ("loaders", "public_cases", "ext/public_loader.py"),
        ("loaders", "secret_cases", "ext/holdout_loader.py"),
    ]


def test_a_loaders_holdout_can_be_a_pool(tmp_path: Path) -> None:
    """A loader's holdout is stored at install, a stored holdout like a file's: it can be
    a pool too, cut into disjoint subsets (docs/integrity.md)."""
    from evals.suites import epoch_holdout

    directory = _suite(tmp_path)
    text = (directory / "suite.yaml").read_text()
    pooled = text.replace(
        "holdout: {loader: secret_cases}", "holdout: {loader: secret_cases, pool: {subset: 1}}"
    )
    assert pooled != text
    (directory / "suite.yaml").write_text(pooled)
    suite = _load(tmp_path, directory)
    assert suite.holdout_pool is not None and suite.holdout_pool.epochs == 2
    secret = b"\x07" * 32
    cut = [[c.id for c in epoch_holdout(suite, secret, epoch)] for epoch in range(3)]
    assert sorted(cut[0] + cut[1]) == ["h0", "h1"] and cut[2] == []
    too_big = pooled.replace("pool: {subset: 1}", "pool: {subset: 3}")
    (directory / "suite.yaml").write_text(too_big)
    with pytest.raises(SuiteError, match="a pool of 2 holdout cases holds no subset of 3"):
        _load(tmp_path, directory)
