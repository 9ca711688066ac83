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
    # schema_mismatch: a store behind (which a process may wait for) is one to clients.
    assert shared == {
        "invalid_input": ["InvalidInput", "InputError"],
        "internal": ["HolonError", "GeneratorBug"],
        "schema_mismatch": ["SchemaMismatch", "SchemaBehind"],
    }


# A drawn line: the name, then the exit code and the HTTP status where the class sets its
# own (a bare status is HTTP too), then its error code (`<...>`: set per instance).
_LINE = re.compile(
    r"^    [\s│├└─]*(?P<name>[A-Z]\w+)\s{2,}(?:exit (?P<exit>\d)\s+)?"
    r"(?:(?:HTTP )?(?P<http>\d{3})\s+)?(?P<code>[a-z_]+|<[^>]+>)"
)


def _drawn_columns(doc: str) -> dict[str, dict[str, str | None]]:
    return {
        m["name"]: {"exit": m["exit"], "http": m["http"], "code": m["code"]}
        for line in doc.splitlines()
        if (m := _LINE.match(line))
    }


def _drift(doc: str) -> list[str]:
    """Where the drawn exit codes, statuses and codes say other than the classes."""
    out = []
    for name, drawn in _drawn_columns(doc).items():
        cls = CLASSES[name]
        parent = cls.__bases__[0] if name != "HolonError" else None
        for column, attribute in (("exit", "exit_code"), ("http", "http_status")):
            value = getattr(cls, attribute)
            if drawn[column] is not None:
                if int(drawn[column] or 0) != value:
                    out.append(f"{name}: drawn {column} {drawn[column]}, the class says {value}")
            elif parent is not None and getattr(parent, attribute) != value:
                out.append(f"{name}: sets its own {attribute} {value}, not drawn")
        code = drawn["code"] or ""
        if not code.startswith("<") and code != cls.code:
            out.append(f"{name}: drawn code {code}, the class says {cls.code}")
    return out


def test_the_drawn_exit_codes_statuses_and_codes_are_the_classes() -> None:
    doc = errors.__doc__ or ""
    assert set(_drawn_columns(doc)) == set(CLASSES)
    assert _drift(doc) == []


def test_a_drawing_that_drifts_is_caught() -> None:
    """Negative: a wrong exit code, a wrong status, an undrawn override, a wrong code."""
    doc = errors.__doc__ or ""
    for old, new in (
        ("NotFound                exit 2", "NotFound                exit 1"),
        ("PayloadTooLarge             413", "PayloadTooLarge             400"),
        ("AgentTimedOut           504 ", "AgentTimedOut               "),
        ("ManifestError                         invalid_manifest", "ManifestError  invalid_suite"),
    ):
        assert old in doc
        doc = doc.replace(old, new)
    assert sorted(_drift(doc)) == [
        "AgentTimedOut: sets its own http_status 504, not drawn",
        "ManifestError: drawn code invalid_suite, the class says invalid_manifest",
        "NotFound: drawn exit 1, the class says 2",
        "PayloadTooLarge: drawn http 400, the class says 413",
    ]


# 130 is not holon's to choose: it is 128 + SIGINT, what a shell reports for Ctrl-C.
_NOT_HOLONS = {0, 130}


def _hand_written_exits(root: Path) -> list[str]:
    """Exit codes written as numbers where the CLI returns or exits with them."""
    found = []
    for path in sorted((root / "gateway" / "cli").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            value = None
            if isinstance(node, ast.Return):
                value = node.value
            elif isinstance(node, ast.Call) and ast.unparse(node.func) in {
                "sys.exit",
                "exit",
                "SystemExit",
            }:
                value = node.args[0] if node.args else None
            if (
                isinstance(value, ast.Constant)
                and type(value.value) is int
                and value.value not in _NOT_HOLONS
            ):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_exit_codes_come_from_the_classes() -> None:
    """An exit code is an exception class's `exit_code` (or `checked(passed)`), never a
    number written by hand, so the tree above is the one table of them."""
    assert _hand_written_exits(ROOT) == []


def test_a_hand_written_exit_code_is_found(tmp_path: Path) -> None:
    (tmp_path / "gateway" / "cli").mkdir(parents=True)
    (tmp_path / "gateway" / "cli" / "x.py").write_text(
        "import sys\ndef a():\n    return 0\ndef b():\n    return 1\nsys.exit(2)\n"
    )
    assert _hand_written_exits(tmp_path) == [
        "gateway/cli/x.py:5: return 1",
        "gateway/cli/x.py:6: sys.exit(2)",
    ]
