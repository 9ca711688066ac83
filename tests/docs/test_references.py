"""Comments and docstrings point to documents that exist.

A `*.md` file named in a Python comment or docstring (the docs a reader is sent to) must be
in the repository: a path with a folder is resolved from the checkout's root or from the
file's own folder, a bare name must be some file's name. Design notes kept outside the
repository are not documents a reader of a clone can open; the fact belongs in docs/
(or in the comment itself).
"""

from __future__ import annotations

import ast
import io
import subprocess
import tokenize
from pathlib import Path

import re2

ROOT = Path(__file__).resolve().parents[2]
_MD = re2.compile(r"(?:^|[^\w./:-])([\w./:-]*\w\.md)\b")


def listed(pattern: str) -> list[Path]:
    """The checkout's files matching `pattern`, as git sees them (tracked or not ignored)."""
    names = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", pattern],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in names if (ROOT / name).is_file()]


def _docstrings(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                found.append((first.lineno, first.value.value))
    return found


def named_documents(source: str) -> list[tuple[int, str]]:
    """(line, name) of every `*.md` named in a comment or a docstring of `source`."""
    texts = _docstrings(source)
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            texts.append((token.start[0], token.string))
    found = []
    for line, text in sorted(texts):
        for match in _MD.finditer(text):
            if "://" not in match.group(1):  # a web page, not a document of this repository
                found.append((line, match.group(1)))
    return found


def exists(name: str, where: Path, names: set[str]) -> bool:
    if "/" not in name:
        return name in names
    return (ROOT / name).exists() or (where.parent / name).exists()


def _may_name_a_missing_document(text: str, where: Path, names: set[str]) -> bool:
    """Whether anywhere in `text` (code too) names a `*.md` that does not exist: only
    such files are parsed for their comments and docstrings, which is slow."""
    return any(
        "://" not in match.group(1) and not exists(match.group(1), where, names)
        for match in _MD.finditer(text)
    )


def test_named_documents_are_found_in_comments_and_strings() -> None:
    source = (
        '"""Scores (docs/evals.md)."""\n'
        "# see GATEWAY.md\n"
        'x = "old.md"  # and ../shared/design/EVALS.md\n'
        "def f() -> None:\n"
        '    """A page: https://example.org/a/README.md, then SUITES.md."""\n'
    )
    assert named_documents(source) == [
        (1, "docs/evals.md"),
        (2, "GATEWAY.md"),
        (3, "../shared/design/EVALS.md"),
        (5, "SUITES.md"),
    ]


def test_every_document_a_comment_names_exists() -> None:
    files = listed("*.py")
    assert len(files) > 100
    names = {path.name for path in listed("*.md")}
    missing = [
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in files
        if _may_name_a_missing_document(text := path.read_text(), path, names)
        for line, name in named_documents(text)
        if not exists(name, path, names)
    ]
    assert not missing, "comments naming documents that are not in the repository:\n" + (
        "\n".join(missing)
    )
