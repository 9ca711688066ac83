"""Bad input through the CLI, end to end: exit 2, file:line named, no traceback, store unchanged.

One store per module (a suite and an agent installed first, so "unchanged"
means something); every broken input goes through the command a person
would type, in-process, and the store's listings and HOLON_HOME's files are
compared before and after.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evals.suites import load_suite
from schema.errors import HolonError
from tests.campaign._mutate import SHIPPED_AGENTS, SHIPPED_SUITES, fuzz_settings, mutated_bytes
from tests.campaign._tally import record
from tests.gateway._cli import CLI, Result

SUITE = "ticket-classify"
AGENT = SHIPPED_AGENTS / "acme-ticket-triage.yaml"


@dataclass
class Store:
    cli: CLI
    home: Path
    suite: Path  # a valid copy of the shipped suite, cut to a few cases
    baseline: Any = None  # the state every refused command must leave

    def state(self) -> Any:
        """What a failed command must not change: listings, and the files under HOLON_HOME."""
        suites = self.cli("suites", "list", "--json")
        agents = self.cli("agents", "list", "--all", "--json")
        assert suites.code == 0 and agents.code == 0, suites.stderr + agents.stderr
        files = sorted(
            str(p.relative_to(self.home))
            for p in self.home.rglob("*")
            if not p.name.startswith("holon.db")  # the database's own journal files come and go
        )
        return suites.json(), agents.json(), files


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    base = tmp_path_factory.mktemp("cli")
    suite = base / SUITE
    shutil.copytree(SHIPPED_SUITES / SUITE, suite)
    cases = suite / "cases" / "public.jsonl"
    kept = [line for line in cases.read_text(encoding="utf-8").splitlines() if line][:4]
    cases.write_text("\n".join(kept) + "\n", encoding="utf-8")
    cli = CLI(base / "home")
    assert cli("suites", "add", str(suite)).code == 0
    assert cli("agents", "register", str(AGENT)).code == 0
    made = Store(cli, base / "home", suite)
    made.baseline = made.state()
    assert len(made.baseline[0]["items"]) == 1 and len(made.baseline[1]["items"]) == 1
    return made


def refused(
    store: Store, argv: list[str], file: Path, line: int | None, *, as_json: bool = True
) -> Result:
    """Run a command that must fail on `file`: exit 2, `file:line` named, nothing changed."""
    result = store.cli(*argv)
    text = result.stdout + result.stderr
    assert result.code == 2, text
    assert "Traceback" not in text and "internal error" not in text, text
    where = f"{file}:{line}:" if line is not None else f"{file}"
    assert where in result.stderr, f"expected {where!r} in: {result.stderr}"
    assert result.stdout == ""
    if as_json:
        again = store.cli(*argv, "--json")
        assert again.code == 2
        details = again.json()["error"]["details"]
        assert details["file"] == str(file), details
        if line is not None:
            assert details["line"] == line, details
    assert store.state() == store.baseline, "a refused command changed the store"
    record("CLI bad input", f"exit 2:{argv[0]} {argv[1]}")
    return result


# -- broken suites: `holon suites add` and `holon suites validate` ---------------------------

Edit = Callable[[Path], tuple[str, int]]  # changes a suite copy; returns (file, line) at fault


def _replace(folder: Path, file: str, old: str, new: str) -> int:
    text = (folder / file).read_text(encoding="utf-8")
    assert old in text, old
    line = text[: text.index(old)].count("\n") + 1
    (folder / file).write_text(text.replace(old, new, 1), encoding="utf-8")
    return line


def _case_line(folder: Path, number: int, new: bytes) -> tuple[str, int]:
    file = folder / "cases" / "public.jsonl"
    lines = file.read_bytes().split(b"\n")
    lines[number - 1] = new
    file.write_bytes(b"\n".join(lines))
    return "cases/public.jsonl", number


def _in_suite(old: str, new: str, fault_after: int = 0) -> Edit:
    """Replace `old` by `new` in suite.yaml; the fault is `fault_after` lines below it."""
    return lambda f: ("suite.yaml", _replace(f, "suite.yaml", old, new) + fault_after)


BROKEN_SUITES: dict[str, Edit] = {
    "unknown key": _in_suite("grace_days:", "grace:"),
    "duplicate key": _in_suite("repetitions: 1\n", "repetitions: 1\nrepetitions: 2\n", 1),
    "wrong type": _in_suite("threshold: 0.7", "threshold: [0.7]"),
    "bad YAML": _in_suite("title: ", "title: a: b "),
    "python tag": _in_suite("title: ", "title: !!python/object/apply:os.system ['id'] "),
    "bad JSONPath": _in_suite("path: $.output.label\n", "path: $.output..[\n"),
    "bad regex": _in_suite("one_of: [low, normal, high, urgent]", "matches: '(?<=low)x('"),
    "unknown predicate": _in_suite("one_of: [low, normal, high, urgent]", "one_off: [low]"),
    "deep nesting": _in_suite("repetitions: 1", "repetitions: " + "[" * 100 + "]" * 100),
    "case not JSON": lambda f: _case_line(f, 2, b'{"id": "x", "input": {'),
    "case duplicate id": lambda f: _case_line(
        f, 3, (f / "cases" / "public.jsonl").read_bytes().split(b"\n")[0]
    ),
    "case unknown key": lambda f: _case_line(
        f, 1, b'{"id": "a", "input": {}, "expected": {}, "tags": [], "colour": "blue"}'
    ),
    "case NaN": lambda f: _case_line(f, 2, b'{"id": "n", "input": NaN, "expected": {}}'),
    "case not UTF-8": lambda f: _case_line(f, 2, b'{"id": "\xff\xfe", "input": {}}'),
    "case lone surrogate": lambda f: _case_line(
        f, 4, b'{"id": "\\ud800", "input": {}, "expected": {}}'
    ),
}


# `suites validate` loads as `suites add` does: one input of each kind is enough there.
VALIDATED = {"duplicate key", "bad JSONPath", "python tag", "case not JSON", "case lone surrogate"}


@pytest.mark.parametrize(
    ("command", "broken"),
    [("add", name) for name in sorted(BROKEN_SUITES)]
    + [("validate", name) for name in sorted(VALIDATED)],
)
def test_a_broken_suite_is_refused_with_its_file_and_line(
    store: Store, command: str, broken: str, tmp_path: Path
) -> None:
    folder = tmp_path / SUITE
    shutil.copytree(store.suite, folder)
    file, line = BROKEN_SUITES[broken](folder)
    refused(store, ["suites", command, str(folder)], folder / file, line)


@pytest.mark.parametrize(
    "examples", [15, pytest.param(50, marks=[pytest.mark.slow, pytest.mark.timeout(900)])]
)
def test_mutated_suites_through_suites_add(store: Store, examples: int) -> None:
    """A sweep: mutations the loader refuses are refused by the CLI the same way."""

    @fuzz_settings(examples)
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        file = data.draw(st.sampled_from(["suite.yaml", "cases/public.jsonl"]), label="file")
        what, new = data.draw(mutated_bytes((store.suite / file).read_bytes()), label="mutation")
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch) / SUITE
            shutil.copytree(store.suite, folder)
            (folder / file).write_bytes(new)
            try:
                load_suite(folder)
            except HolonError as exc:
                location = exc.location  # type: ignore[attr-defined]
                refused(
                    store,
                    ["suites", "add", str(folder)],
                    Path(location.file),
                    location.line,
                    as_json=False,
                )
            else:
                record("CLI bad input", "loaded:suites add (not run: it would install)")

    one()


# -- broken manifests: `holon agents register` -----------------------------------------------

GOOD_MANIFEST = AGENT.read_text(encoding="utf-8")


def _manifest(old: str, new: str) -> tuple[str, int]:
    assert old in GOOD_MANIFEST, old
    return GOOD_MANIFEST.replace(old, new, 1), GOOD_MANIFEST[: GOOD_MANIFEST.index(old)].count(
        "\n"
    ) + 1


BROKEN_MANIFESTS: dict[str, tuple[str, int]] = {
    "unknown key": _manifest("contact:", "contacts:"),
    "duplicate key": (GOOD_MANIFEST + "protocol: a2a\n", GOOD_MANIFEST.count("\n") + 1),
    "bad id": _manifest("id: acme/ticket-triage", "id: Acme/Ticket_Triage"),
    "wrong type": _manifest("capabilities: [ticket.classify]", "capabilities: ticket.classify"),
    "credentials in URL": _manifest(
        "endpoint: asgi:examples.agents.ticket_triage:app",
        "endpoint: https://user:pw@agents.example/x",
    ),
    "asgi endpoint, http protocol": _manifest("protocol: asgi", "protocol: a2a"),
    "bad YAML": _manifest("capabilities: [ticket.classify]", "capabilities: [ticket.classify]]"),
    "tag": _manifest("id: acme", "id: !!binary YWNtZQ== #"),
    "NaN": _manifest("timeout_s: ", "timeout_s: .nan #"),
}


@pytest.mark.parametrize("broken", sorted(BROKEN_MANIFESTS))
def test_a_broken_manifest_is_refused_with_its_file_and_line(
    store: Store, broken: str, tmp_path: Path
) -> None:
    text, line = BROKEN_MANIFESTS[broken]
    file = tmp_path / "agent.yaml"
    file.write_text(text, encoding="utf-8")
    refused(store, ["agents", "register", str(file)], file, line)


def test_a_manifest_that_is_not_utf8_names_the_line(store: Store, tmp_path: Path) -> None:
    file = tmp_path / "agent.yaml"
    data = AGENT.read_bytes()
    at = data.index(b"contact:")
    file.write_bytes(data[:at] + b"\xff" + data[at:])
    refused(store, ["agents", "register", str(file)], file, data[:at].count(b"\n") + 1)


# -- broken checks and documents: `holon checks grade` ---------------------------------------

GOOD_CHECKS = "- {name: label, path: $.output.label, equals: billing}\n"
GOOD_DOCUMENT = '{"output": {"label": "billing"}}\n'

BROKEN_GRADES: dict[str, tuple[str, str, str, int]] = {
    # name: (checks text, document text, which file is at fault, line)
    "bad JSONPath": (
        "- {path: $.output.label, exists: true}\n- {path: '$[?', exists: true}\n",
        "",
        "checks",
        2,
    ),
    "bad regex": ("\n\n- {path: $.output.label, matches: '(a'}\n", "", "checks", 3),
    "unknown predicate": ("- {path: $.output.label, equal: billing}\n", "", "checks", 1),
    "duplicate names": (GOOD_CHECKS + GOOD_CHECKS, "", "checks", 2),
    "duplicate key": ("- path: $.a\n  path: $.b\n  exists: true\n", "", "checks", 2),
    "not a list": ("path: $.a\n", "", "checks", 1),
    "document not JSON": ("", '{\n"output":\n  {"label": billing}}\n', "document", 3),
    "document unknown key": ("", '{"outptu": {}}\n', "document", None),  # type: ignore[dict-item]
    "document NaN": ("", '{\n "output": NaN}\n', "document", 2),
}


@pytest.mark.parametrize("broken", sorted(BROKEN_GRADES))
def test_broken_checks_or_documents_are_refused_with_file_and_line(
    store: Store, broken: str, tmp_path: Path
) -> None:
    checks_text, document_text, at_fault, line = BROKEN_GRADES[broken]
    checks = tmp_path / "checks.yaml"
    document = tmp_path / "document.json"
    checks.write_text(checks_text or GOOD_CHECKS, encoding="utf-8")
    document.write_text(document_text or GOOD_DOCUMENT, encoding="utf-8")
    fault = checks if at_fault == "checks" else document
    refused(store, ["checks", "grade", str(checks), str(document)], fault, line)


def test_the_unbroken_grade_passes(store: Store, tmp_path: Path) -> None:
    checks = tmp_path / "checks.yaml"
    document = tmp_path / "document.json"
    checks.write_text(GOOD_CHECKS, encoding="utf-8")
    document.write_text(GOOD_DOCUMENT, encoding="utf-8")
    assert store.cli("checks", "grade", str(checks), str(document)).code == 0
