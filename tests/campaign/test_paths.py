"""Path traversal in every file argument, and output files in odd places.

A suite is self-contained: whatever it names (case files, schemas, check
schemas, extensions) must resolve, symlinks followed, inside its folder, and
be a regular file. Fixture references are names, never paths. Files written
for people (`fixtures render -o`, `evals report -o`, `suites pull -o`) are
written whole or not at all, never replace a device, and say clearly why
they could not be written.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from evals.suites import load_suite
from schema import jsontext
from schema.errors import SuiteError
from tests.campaign._mutate import SHIPPED_SUITES
from tests.campaign._tally import record
from tests.evals.reports._setup import suite_dir, write_manifest
from tests.gateway._cli import CLI

SUITE = "ticket-classify"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """A valid copy of the shipped suite (a few cases), with a valid case file outside it."""
    folder = tmp_path / "suites" / SUITE
    shutil.copytree(SHIPPED_SUITES / SUITE, folder)
    cases = folder / "cases" / "public.jsonl"
    kept = [line for line in cases.read_text(encoding="utf-8").splitlines() if line][:3]
    cases.write_text("\n".join(kept) + "\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(cases, outside / "public.jsonl")  # valid: refused for where it is, not what
    shutil.copy(folder / "schemas" / "input.json", outside / "input.json")
    load_suite(folder)
    return folder


def _edit(folder: Path, old: str, new: str) -> int:
    """Replace text in suite.yaml; the 1-based line it was on."""
    file = folder / "suite.yaml"
    text = file.read_text(encoding="utf-8")
    assert old in text, old
    file.write_text(text.replace(old, new, 1), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def _refused(folder: Path, line: int | None, words: str, file: Path | None = None) -> None:
    """The suite does not load, for `words`, at file:line. (A path the suite schema
    already refuses, such as an absolute one, says "expected a relative path inside
    the suite directory"; one that resolves outside, "leads outside the suite directory".)"""
    with pytest.raises(SuiteError) as caught:
        load_suite(folder)
    error = caught.value
    assert words in error.message, error.message
    assert error.location.file == str(file or folder / "suite.yaml"), str(error)
    if line is not None:
        assert error.location.line == line, str(error)
    record("path traversal", "refused")


PUBLIC = "public: {file: cases/public.jsonl}"
ESCAPES = {
    "relative": "../../../../../../etc/passwd",
    "absolute": "/etc/passwd",
    "dotdot inside a path": "cases/../../../outside/public.jsonl",
    "absolute to a valid file": "{outside}/public.jsonl",
    "device": "/dev/zero",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_a_case_file_outside_the_suite_is_refused(suite: Path, name: str) -> None:
    target = ESCAPES[name].format(outside=suite.parents[1] / "outside")
    line = _edit(suite, PUBLIC, f"public: {{file: '{target}'}}")
    _refused(suite, line, "suite directory")


def test_a_stored_holdout_outside_the_suite_is_refused(suite: Path) -> None:
    text = (suite / "suite.yaml").read_text(encoding="utf-8")
    head = text[: text.index("holdout:")]
    (suite / "suite.yaml").write_text(
        head + "holdout: {file: ../../outside/public.jsonl}\n", encoding="utf-8"
    )
    _refused(suite, head.count("\n") + 1, "suite directory")


@pytest.mark.parametrize("target", ["../../outside/input.json", "/etc/passwd"])
def test_a_schema_outside_the_suite_is_refused(suite: Path, target: str) -> None:
    line = _edit(
        suite, "input_schema: {$ref: schemas/input.json}", f"input_schema: {{$ref: '{target}'}}"
    )
    _refused(suite, line, "suite directory")


@pytest.mark.parametrize("target", ["../../outside/input.json", "/etc/passwd", "/dev/zero"])
def test_a_check_schema_outside_the_suite_is_refused(suite: Path, target: str) -> None:
    line = _edit(
        suite,
        "  - name: label\n    path: $.output.label\n    equals: {path: $.expected.label}\n"
        "    normalize: [strip, casefold]\n",
        f"  - name: label\n    path: $.output\n    schema: {{$ref: '{target}'}}\n",
    )
    _refused(suite, line + 2, "outside the suite directory")


@pytest.mark.parametrize("ref", ["file:///etc/passwd", "https://example.com/s.json", "../x.json"])
def test_a_schema_may_refer_only_inside_itself(suite: Path, ref: str) -> None:
    schema = suite / "schemas" / "input.json"
    value = jsontext.loads(schema.read_text(encoding="utf-8"))
    value["properties"]["subject"] = {"$ref": ref}
    schema.write_text(jsontext.dumps(value), encoding="utf-8")
    _refused(suite, 1, "only local references", file=schema)


@pytest.mark.parametrize("escape", ["../../evil.py", "/etc/passwd"])
def test_an_extension_outside_the_suite_is_refused(suite: Path, escape: str) -> None:
    (suite.parents[1] / "evil.py").write_text("raise SystemExit('ran')\n", encoding="utf-8")
    text = (suite / "suite.yaml").read_text(encoding="utf-8")
    (suite / "suite.yaml").write_text(
        text + f"extensions:\n  graders:\n    evil: '{escape}'\n", encoding="utf-8"
    )
    _refused(suite, text.count("\n") + 3, "suite directory")


Link = Callable[[Path], None]
LINKS: dict[str, Link] = {
    "case file to a file outside": lambda s: (
        (s / "cases" / "public.jsonl").unlink()
        or (s / "cases" / "public.jsonl").symlink_to(s.parents[1] / "outside" / "public.jsonl")
    ),
    "case folder to a folder outside": lambda s: (
        shutil.rmtree(s / "cases")
        or (s / "cases").symlink_to(s.parents[1] / "outside", target_is_directory=True)
    ),
    "schema to /etc/passwd": lambda s: (
        (s / "schemas" / "input.json").unlink()
        or (s / "schemas" / "input.json").symlink_to("/etc/passwd")
    ),
    "case file to /dev/zero": lambda s: (
        (s / "cases" / "public.jsonl").unlink()
        or (s / "cases" / "public.jsonl").symlink_to("/dev/zero")
    ),
}


@pytest.mark.parametrize("name", sorted(LINKS))
def test_a_symlink_out_of_the_suite_is_refused(suite: Path, name: str) -> None:
    LINKS[name](suite)
    _refused(suite, None, "leads outside the suite directory")


def test_a_named_pipe_as_a_case_file_is_refused_not_waited_on(suite: Path) -> None:
    cases = suite / "cases" / "public.jsonl"
    cases.unlink()
    os.mkfifo(cases)
    _refused(suite, None, "is not a regular file")


def test_a_case_file_that_is_a_folder_is_refused(suite: Path) -> None:
    cases = suite / "cases" / "public.jsonl"
    cases.unlink()
    cases.mkdir()
    _refused(suite, None, "is not a regular file")


@pytest.mark.parametrize(
    "reference",
    [
        {"$fixture": "../../etc/passwd", "seed": 1},
        {"$fixture": "/etc/passwd", "seed": 1},
        {"$fixture": "ticket", "seed": 1, "params": {"file": "/etc/passwd"}},
        {"$truth": "../ticket", "seed": 1},
    ],
)
def test_a_fixture_reference_is_a_name_not_a_path(
    suite: Path, reference: dict[str, object]
) -> None:
    cases = suite / "cases" / "public.jsonl"
    lines = cases.read_text(encoding="utf-8").splitlines()
    first = jsontext.loads(lines[0])
    first["input"] = reference
    lines[1] = jsontext.dumps({**first, "id": "fixture-path"})
    cases.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(SuiteError) as caught:
        load_suite(suite)
    assert caught.value.location.file == str(cases)
    assert caught.value.location.line == 2
    record("path traversal", "refused")


def test_an_unreferenced_symlink_out_of_the_suite_is_refused_at_install(
    suite: Path, tmp_path: Path
) -> None:
    (suite / "notes.txt").symlink_to("/etc/passwd")
    load_suite(suite)  # the loader reads only what the suite names...
    cli = CLI(tmp_path / "home")
    result = cli("suites", "add", str(suite))  # ...but installing copies every file
    assert result.code == 2, result.stderr
    assert f"{suite / 'notes.txt'}: a symlink leads outside the suite directory" in result.stderr
    assert cli("suites", "list", "--json").json()["items"] == []
    record("path traversal", "refused")


# -- output files: `fixtures render -o`, `evals report -o`, `suites pull -o` ------------------


def _device_untouched(path: str) -> None:
    assert stat.S_ISCHR(os.stat(path).st_mode), f"{path} is no longer a device"
    assert not [p for p in os.listdir(Path(path).parent) if p.startswith(f".{Path(path).name}")]


def test_render_into_odd_places(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home")
    (tmp_path / "a-file").write_text("keep me", encoding="utf-8")
    render = ("fixtures", "render", "ticket", "--seed", "7", "-o")

    full = cli(*render, "/dev/full")
    assert full.code == 3 and "cannot write /dev/full: No space left on device" in full.stderr
    _device_untouched("/dev/full")  # written to, never replaced (we may be root)

    null = cli(*render, "/dev/null")
    assert null.code == 0, null.stderr
    _device_untouched("/dev/null")

    folder = cli(*render, str(tmp_path))
    assert folder.code == 2 and f"{tmp_path}: is a directory" in folder.stderr

    under_file = cli(*render, str(tmp_path / "a-file" / "x.json"))
    assert under_file.code == 2 and "a part of the path is a file" in under_file.stderr
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "keep me"

    deep = cli(*render, str(tmp_path / "new" / "deep" / "t.json"))
    assert deep.code == 0 and (tmp_path / "new" / "deep" / "t.json").is_file()

    # A symlink at the target is replaced by the file, its own target left alone.
    (tmp_path / "link.json").symlink_to(tmp_path / "a-file")
    assert cli(*render, str(tmp_path / "link.json")).code == 0
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "keep me"
    assert not (tmp_path / "link.json").is_symlink()

    for result in (full, folder, under_file):
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        record("output files", f"exit {result.code}")
    assert not list(tmp_path.glob(".*tmp-*")), "a temporary file was left behind"


def test_report_and_pull_into_odd_places(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home")
    assert cli("suites", "add", str(suite_dir(tmp_path / "src"))).code == 0
    assert cli("agents", "register", str(write_manifest(tmp_path))).code == 0
    ran = cli("eval", "test/echo", "--yes", "--json")
    assert ran.code in (0, 1), ran.stderr
    eval_id = ran.json()["eval"]["id"]
    report = ("evals", "report", eval_id, "-o")
    (tmp_path / "old.md").write_text("the previous report", encoding="utf-8")

    full = cli(*report, "/dev/full")
    assert full.code == 3 and "cannot write /dev/full: No space left on device" in full.stderr
    _device_untouched("/dev/full")
    folder = cli(*report, str(tmp_path))
    assert folder.code == 2 and "is a directory" in folder.stderr
    replaced = cli(*report, str(tmp_path / "old.md"))
    assert replaced.code == 0 and "# Eval report" in (tmp_path / "old.md").read_text("utf-8")

    suite_id = cli("suites", "list", "--json").json()["items"][0]["id"]
    (tmp_path / "a-file").write_text("keep me", encoding="utf-8")
    onto_file = cli("suites", "pull", suite_id, "-o", str(tmp_path / "a-file"))
    assert onto_file.code == 2 and "exists and is not a folder" in onto_file.stderr
    under_file = cli("suites", "pull", suite_id, "-o", str(tmp_path / "a-file" / "s"))
    assert under_file.code == 2 and "a part of the path is a file" in under_file.stderr
    pulled = cli("suites", "pull", suite_id, "-o", str(tmp_path / "pulled"))
    assert pulled.code == 0 and (tmp_path / "pulled" / "suite.yaml").is_file()
    for result in (full, folder, onto_file, under_file):
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        record("output files", f"exit {result.code}")
    assert not list(tmp_path.glob(".*tmp-*")), "a temporary file was left behind"
