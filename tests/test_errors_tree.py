"""The exception tree is one tree, drawn truthfully, and nothing grows outside it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from schema import errors

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("schema", "agents", "records", "evals", "gateway")  # the example agents are not holon
CLASSES = {
    name: cls
    for name, cls in vars(errors).items()
    if isinstance(cls, type) and issubclass(cls, errors.HolonError)
}


def _drawn() -> dict[str, str | None]:
    """Each class in the module docstring's tree, with the parent it is drawn under."""
    doc = errors.__doc__ or ""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        match = re.match(r"^[\s│├└─]*([A-Z]\w+)\s{2,}", line)
        if match is None or not line.startswith("    "):
            continue
        depth = match.start(1)  # the column the name is drawn at
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parents[match.group(1)] = stack[-1][1] if stack else None
        stack.append((depth, match.group(1)))
    return parents


def test_the_docstring_draws_every_class_under_its_parent() -> None:
    drawn = _drawn()
    assert set(drawn) == set(CLASSES)
    for name, parent in drawn.items():
        base = CLASSES[name].__bases__[0]
        assert (None if name == "HolonError" else base.__name__) == parent, name


def test_every_holon_error_class_lives_in_schema_errors() -> None:
    """A class defined elsewhere could not be rebuilt from its body by a client that never
    imported its module (`errors.error_from_body`)."""
    outside = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path == ROOT / "schema" / "errors.py":
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    bases = {b.id for b in node.bases if isinstance(b, ast.Name)}
                    bases |= {b.attr for b in node.bases if isinstance(b, ast.Attribute)}
                    if bases & set(CLASSES):
                        outside.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.name}")
    assert outside == []


def test_codes_are_unique_except_where_a_subclass_keeps_its_parents() -> None:
    by_code: dict[str, list[str]] = {}
    for name, cls in CLASSES.items():
        by_code.setdefault(cls.code, []).append(name)
    shared = {code: names for code, names in by_code.items() if len(names) > 1}
    # invalid_input names two faults on purpose: a live input (400) and a file (422).
    # internal: a generator's bug is an internal error like any other.
    assert shared == {
        "invalid_input": ["InvalidInput", "InputError"],
        "internal": ["HolonError", "GeneratorBug"],
    }
