"""Fuzzing agent manifests and check DSL documents: they load, or say where they are wrong.

Manifests: the shipped ones (examples/agents/*.yaml), mutated as files
(`load_manifest`) and as parsed JSON from a request (`manifest_from_dict`),
with odd endpoints besides the generic mutations. Checks: every check list
of the shipped suites (suite-wide, per case, generated holdout), mutated
and compiled from a file (file:line:col) and from a bare value.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agents import load_manifest, manifest_from_dict
from evals.checks import compile_checks
from schema import jsontext, load_document
from schema.documents import parse_document
from tests.campaign._mutate import (
    SHIPPED_AGENTS,
    SHIPPED_SUITES,
    fuzz_settings,
    judge,
    mutated_bytes,
    mutated_value,
    pretty,
)

MANIFESTS = sorted(SHIPPED_AGENTS.glob("*.yaml"))
LONG = pytest.mark.timeout(900)  # the long passes take minutes, not the default 120 s

ENDPOINTS = [
    "http://user:pass@agents.example/x",
    "https://:secret@agents.example/",
    "http://agents.example:99999/",
    "http://agents.example:-1/",
    "http://[::1/",
    "http://",
    "https:///path",
    "javascript:alert(1)",
    "file:///etc/passwd",
    "ftp://agents.example/",
    "http://agents.example/#fragment",
    "http://agents.example/\r\nHost: evil",
    "asgi:os:system",
    "asgi:",
    "asgi:a:b:c",
    "http://" + "a" * 3000 + ".example/",
    "http://127.0.0.1:8101/",
    "http://[::1]:8101/",
    "http://169.254.169.254/latest/meta-data/",
    "HTTP://AGENTS.EXAMPLE/",
]


def _manifest_values() -> list[Any]:
    return [load_document(path).value for path in MANIFESTS]


def _check_lists() -> list[Any]:
    """Every list of checks in the shipped suites: suite-wide, generated holdout, per case."""
    found: list[Any] = []
    for suite in sorted(SHIPPED_SUITES.iterdir()):
        if not (suite / "suite.yaml").is_file():
            continue
        document = load_document(suite / "suite.yaml").value
        found.append(document.get("checks", []))
        template = (document.get("holdout") or {}).get("generate", {}).get("case", {})
        if "checks" in template:
            found.append(template["checks"])
        for cases in sorted(suite.rglob("*.jsonl")):
            lines = [line for line in cases.read_text(encoding="utf-8").splitlines() if line]
            for line in lines[:5]:
                case = jsontext.loads(line)
                if "checks" in case:
                    found.append(case["checks"])
    return found


MANIFEST_VALUES = _manifest_values()
CHECK_LISTS = _check_lists()


@st.composite
def manifest_value(draw: st.DrawFn) -> tuple[str, Any]:
    value = draw(st.sampled_from(MANIFEST_VALUES))
    if draw(st.integers(0, 3)) == 0:
        value = jsontext.loads(jsontext.dumps(value))
        value["endpoint"] = draw(st.sampled_from(ENDPOINTS))
        if not value["endpoint"].startswith("asgi:"):
            value["protocol"] = draw(st.sampled_from(["holon-http", "a2a", "asgi"]))
        return f"endpoint {value['endpoint'][:40]!r}", value
    result: tuple[str, Any] = draw(mutated_value(value))
    return result


@pytest.mark.parametrize("examples", [150, pytest.param(1000, marks=[pytest.mark.slow, LONG])])
def test_a_mutated_manifest_file_loads_or_says_where_it_is_wrong(examples: int) -> None:
    @fuzz_settings(examples)
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        if data.draw(st.booleans(), label="textual"):
            source = data.draw(st.sampled_from(MANIFESTS), label="manifest")
            what, new = data.draw(mutated_bytes(source.read_bytes()), label="mutation")
        else:
            what, value = data.draw(manifest_value(), label="mutation")
            new = (pretty(value) + "\n").encode()
        with tempfile.TemporaryDirectory() as scratch:
            file = Path(scratch) / "agent.yaml"
            file.write_bytes(new)
            judge("agent manifest (file)", lambda: load_manifest(file))

    one()


@pytest.mark.parametrize("examples", [150, pytest.param(1000, marks=[pytest.mark.slow, LONG])])
def test_a_mutated_manifest_request_is_accepted_or_refused_clearly(examples: int) -> None:
    @fuzz_settings(examples)
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        what, value = data.draw(manifest_value(), label="mutation")
        # A request has no lines: the error names the source and the JSON path.
        judge(
            "agent manifest (request)",
            lambda: manifest_from_dict(value),
            files_with_lines=False,
        )

    one()


@pytest.mark.parametrize("examples", [80, pytest.param(300, marks=[pytest.mark.slow, LONG])])
def test_a_mutated_check_list_compiles_or_says_where_it_is_wrong(examples: int) -> None:
    @fuzz_settings(examples)
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        checks = data.draw(st.sampled_from(CHECK_LISTS), label="checks")
        textual = data.draw(st.booleans(), label="textual")
        if textual:
            text = pretty(checks).encode()
            what, new = data.draw(mutated_bytes(text), label="mutation")
        else:
            what, value = data.draw(mutated_value(checks), label="mutation")
            new = pretty(value).encode()
        with tempfile.TemporaryDirectory() as scratch:
            file = Path(scratch) / "checks.yaml"
            file.write_bytes(new)

            def compile_file() -> None:
                document = load_document(file)
                compile_checks(document.value, document=document, base_dir=Path(scratch))

            judge("check DSL (file)", compile_file)
            if not textual:
                # The same checks as a bare value (e.g. from an API body): no file to name.
                judge(
                    "check DSL (value)",
                    lambda: compile_checks(value, base_dir=Path(scratch)),
                    files_with_lines=False,
                )

    one()


def test_the_shipped_documents_are_valid_to_begin_with() -> None:
    # The mutations start from valid documents, so every error is the mutation's.
    for path in MANIFESTS:
        load_manifest(path)
    for checks in CHECK_LISTS:
        compile_checks(checks)
    assert parse_document(pretty(MANIFEST_VALUES[0])).value == MANIFEST_VALUES[0]
