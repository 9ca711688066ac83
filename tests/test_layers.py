"""The layers are a rule, not a convention: no package imports one above it.

schema < agents < records < evals < gateway (docs/architecture.md). Every
import counts: at module level, inside a function (the lazy imports that keep
start-up fast) and under TYPE_CHECKING alike, since each is a dependency the
lower package would then have on the upper one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("schema", "agents", "records", "evals", "gateway")
# What each package may import of the others. `records` stands beside `agents`,
# not on it: persistence never needs the executor (its docstring says so too).
ALLOWED = {
    "schema": set(),
    "agents": {"schema"},
    "records": {"schema"},
    "evals": {"schema", "agents", "records"},
    "gateway": {"schema", "agents", "records", "evals"},
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def violations(root: Path) -> list[str]:
    out = []
    for package in LAYERS:
        for path in sorted((root / package).rglob("*.py")):
            for line, module in _imports(path):
                top = module.split(".")[0]
                if top in LAYERS and top != package and top not in ALLOWED[package]:
                    out.append(f"{path.relative_to(root)}:{line}: {package} imports {module}")
    return out


def test_no_package_imports_upward() -> None:
    assert violations(ROOT) == []


def test_the_rule_can_fail(tmp_path: Path) -> None:
    for package in LAYERS:
        (tmp_path / package).mkdir()
    (tmp_path / "records" / "_bad.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from evals import Plan\n"
        "def late() -> None:\n"
        "    import gateway.server\n"
    )
    (tmp_path / "agents" / "ok.py").write_text("from schema import errors\nfrom . import x\n")
    assert violations(tmp_path) == [
        "records/_bad.py:4: records imports evals",
        "records/_bad.py:6: records imports gateway.server",
    ]


@pytest.mark.parametrize("package", LAYERS)
def test_every_layer_is_a_package_here(package: str) -> None:
    assert (ROOT / package / "__init__.py").is_file()
