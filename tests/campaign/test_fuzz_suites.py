"""Fuzzing the suite loader: every mutation of a shipped suite loads or is a clear SuiteError.

Each input is a copy of a shipped suite (examples/suites/*, cut to a few
cases a split so a load is fast) with one mutation of its suite.yaml, a case
file or a schema: structural (keys deleted, injected or renamed, types
changed, huge numbers, deep nesting, bad JSONPaths and regexes in checks) or
textual (bad YAML, duplicate keys, tags, aliases, bytes that are not UTF-8).
`load_suite` must either load it or raise a holon input error naming the
file and the line, and never write to the suite folder.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evals.suites import load_suite
from schema import jsontext
from schema.documents import parse_document
from tests.campaign._mutate import (
    SHIPPED_SUITES,
    Shown,
    fuzz_settings,
    judge,
    mutated_bytes,
    mutated_value,
    pretty,
    snapshot,
)

CASES_KEPT = 3
LONG = pytest.mark.timeout(900)  # the long passes take minutes, not the default 120 s
SUITES = sorted(p.name for p in SHIPPED_SUITES.iterdir() if (p / "suite.yaml").is_file())


@pytest.fixture(scope="module")
def trimmed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each shipped suite with its case files cut to their first few cases."""
    base = tmp_path_factory.mktemp("shipped")
    out = {}
    for name in SUITES:
        target = base / name
        shutil.copytree(SHIPPED_SUITES / name, target)
        for cases in target.rglob("*.jsonl"):
            kept = [line for line in cases.read_text(encoding="utf-8").splitlines() if line][
                :CASES_KEPT
            ]
            cases.write_text("\n".join(kept) + "\n", encoding="utf-8")
        load_suite(target)  # the unmutated copy is valid
        out[name] = target
    return out


def _files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())


def mutation(folder: Path) -> st.SearchStrategy[tuple[str, str, bytes]]:
    """(file, what was done, its new bytes) for one mutation of one file of the suite."""
    return _mutation(folder).map(Shown)


@st.composite
def _mutation(draw: st.DrawFn, folder: Path) -> tuple[str, str, bytes]:
    """(file, what was done, its new bytes) for one mutation of one file of the suite."""
    files = _files(folder)
    weights = ["suite.yaml"] * 4 + [f for f in files if f.endswith(".jsonl")] * 2 + files
    file = draw(st.sampled_from(weights))
    data = (folder / file).read_bytes()
    if draw(st.booleans()):
        what, new = draw(mutated_bytes(data))
        return file, what, new
    if file.endswith(".jsonl"):
        lines = data.decode("utf-8").splitlines()
        index = draw(st.integers(0, len(lines) - 1))
        what, value = draw(mutated_value(jsontext.loads(lines[index])))
        lines[index] = jsontext.dumps(value, ensure_ascii=True)
        return file, f"line {index + 1}: {what}", ("\n".join(lines) + "\n").encode()
    what, value = draw(mutated_value(parse_document(data.decode("utf-8")).value))
    return file, what, (pretty(value) + "\n").encode()


# (suite, inputs): a quick pass on every run, a long one marked slow (CI).
SIZES = [
    *[pytest.param(suite, 25, id=f"{suite}-25") for suite in SUITES],
    *[
        pytest.param(suite, 120, id=f"{suite}-120", marks=[pytest.mark.slow, LONG])
        for suite in SUITES
    ],
]


@pytest.mark.parametrize(("suite", "examples"), SIZES)
def test_a_mutated_suite_loads_or_says_where_it_is_wrong(
    suite: str, examples: int, trimmed: dict[str, Path]
) -> None:
    source = trimmed[suite]

    @fuzz_settings(examples)
    @given(data=st.data())
    def one(data: st.DataObject) -> None:
        file, what, new = data.draw(mutation(source), label="mutation")
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch) / suite
            shutil.copytree(source, folder)
            (folder / file).write_bytes(new)
            before = snapshot(folder)
            judge("suite loader", lambda: load_suite(folder))
            assert snapshot(folder) == before, "the loader wrote to the suite folder"

    one()
