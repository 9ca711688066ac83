"""Trusted extensions: custom graders and generators run only once trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.checks import grade
from evals.suites import TrustStore, load_suite, suite_digests
from schema.errors import SuiteError
from tests.evals.suites._make import SUITE_YAML, case, make_suite
from tests.gateway._cli import CLI

GRADER = '''
def grade(actual, operand):
    """Passes when the label is written in the case the operand names."""
    if not isinstance(actual, str):
        return False, "not a string"
    return (actual.isupper() if operand == "upper" else actual.islower()), f"label {actual!r}"
'''

GENERATOR = """
from evals.fixtures import Fixture, Generator

def _produce(seed, params):
    return Fixture(value={"subject": f"ticket {seed}", "body": "x"}, truth={"label": "other"})

GENERATOR = Generator(
    name="tiny_tickets",
    version=1,
    description="numbered tickets",
    params_schema={"type": "object", "additionalProperties": False},
    produce=_produce,
)
"""

WITH_EXTENSIONS = SUITE_YAML.replace(
    "public: {file: cases/public.jsonl}",
    "fixtures: {tick: {generator: tiny_tickets}}\n"
    "extensions:\n"
    "  graders: {lettercase: ext/grader.py}\n"
    "  generators: {tiny_tickets: ext/generator.py}\n"
    "public: {file: cases/public.jsonl}",
).replace(
    "  - {name: label, path: $.output.label, equals: {path: $.expected.label}}\n",
    "  - {name: label, path: $.output.label, equals: {path: $.expected.label}}\n"
    "  - {name: lower, path: $.output.label, lettercase: lower}\n",
)


def _suite(tmp_path: Path) -> Path:
    public = [
        case("p1"),
        {
            "id": "p2",
            "input": {"$fixture": "tick", "seed": 3},
            "expected": {"$truth": "tick", "seed": 3},
        },
    ]
    directory = make_suite(tmp_path, suite_yaml=WITH_EXTENSIONS, public=public)
    (directory / "ext").mkdir()
    (directory / "ext" / "grader.py").write_text(GRADER)
    (directory / "ext" / "generator.py").write_text(GENERATOR)
    return directory


def test_untrusted_extensions_do_not_load(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    with pytest.raises(SuiteError, match="is not trusted") as caught:
        load_suite(directory)
    assert "holon suites trust" in str(caught.value)
    with pytest.raises(SuiteError, match="is not trusted"):
        load_suite(directory, trusted=TrustStore(tmp_path / "home").trusted)


def test_trusted_extensions_grade_and_generate(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    cli = CLI(tmp_path / "home")
    trusted = cli("suites", "trust", str(directory), "--json")
    assert trusted.code == 0
    assert {t["name"] for t in trusted.json()["trusted"]} == {"lettercase", "tiny_tickets"}
    suite = load_suite(directory, trusted=TrustStore(tmp_path / "home").trusted)
    checks = suite.public[0].checks
    document = {"input": {}, "output": {"label": "other"}, "expected": {"label": "other"}}
    assert grade(checks, document).passed
    shouted = grade(checks, {**document, "output": {"label": "OTHER"}})
    failed = [r for r in shouted.results if not r.passed]
    assert [r.name for r in failed] == ["label", "lower"]
    assert "label 'OTHER'" in failed[1].detail
    # The generator is usable by the suite's fixtures.
    assert cli("suites", "validate", str(directory), "--json").code == 0


def test_a_changed_file_is_untrusted_again_and_changes_the_digest(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    store = TrustStore(tmp_path / "home")
    CLI(tmp_path / "home")("suites", "trust", str(directory))
    before = suite_digests(load_suite(directory, trusted=store.trusted))
    (directory / "ext" / "grader.py").write_text(GRADER + "\n# changed\n")
    with pytest.raises(SuiteError, match="grader.py' .* is not trusted"):
        load_suite(directory, trusted=store.trusted)
    CLI(tmp_path / "home")("suites", "trust", str(directory))
    after = suite_digests(load_suite(directory, trusted=store.trusted))
    assert after.checks != before.checks and after.dataset == before.dataset


def test_an_extension_must_define_what_it_claims(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    (directory / "ext" / "grader.py").write_text("x = 1\n")
    CLI(tmp_path / "home")("suites", "trust", str(directory))
    with pytest.raises(SuiteError, match="defines no function grade"):
        load_suite(directory, trusted=TrustStore(tmp_path / "home").trusted)


def test_installing_needs_trust_and_the_installed_copy_loads(tmp_path: Path) -> None:
    directory = _suite(tmp_path)
    cli = CLI(tmp_path / "home")
    refused = cli("suites", "add", str(directory))
    assert refused.code == 2 and "is not trusted" in refused.stderr
    cli("suites", "trust", str(directory))
    assert cli("suites", "add", str(directory)).code == 0
    assert cli("suites", "validate", "tiny", "--json").json()["public"] == {"cases": 2}
    res = cli("test", "tiny", "--endpoint", "asgi:examples.agents.ticket_triage:app", "--json")
    assert res.code in (0, 1) and len(res.json()["cases"]) == 2
