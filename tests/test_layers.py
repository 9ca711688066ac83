"""The layers are a rule, not a convention: no package imports one above it.

schema < agents < records < evals < gateway (docs/architecture.md). Every
import counts: at module level, inside a function (the lazy imports that keep
start-up fast) and under TYPE_CHECKING alike, since each is a dependency the
lower package would then have on the upper one.

Inside `gateway` the same rule holds between its floors (docs/architecture.md,
"Gateway's floors"): each subpackage or top module imports only those on floors
below its own, never a peer on its floor, so its subpackages form no circle.

And each package, and each unit of `gateway`, is used through its face: no import
from outside it names one of its private modules (`_x`) or private names, so what
it exports is the list in its `__init__` and nothing else.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
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

# Gateway's floors, top first; a unit is a subpackage or a top module of gateway/
# ("__init__": gateway/__init__.py itself, which runs before any of them).
GATEWAY_FLOORS: tuple[frozenset[str], ...] = tuple(
    frozenset(floor)
    for floor in (
        {"cli"},  # the command line: serves the app, reaches a gateway through the client
        {"server", "client"},  # the app and the HTTP client: they meet over the wire only
        {"console"},  # pages the server's app mounts
        {"web"},  # what the server and the console share: auth, request checks, state
        {"operations"},  # the operation table every door reads
        {"service"},  # the store's service and its views: what the operations run on
        {"live"},  # live calls
        {"mandates"},  # a mandate's document and its decision
        {"settings", "_ttl"},
        {"__init__", "_fetch", "_loops", "_network", "_params", "_roles", "_tracing"},
    )
)


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


def _unit(root: Path, path: Path) -> str:
    """The gateway unit a file belongs to: its subpackage, or its top module's name."""
    first = path.relative_to(root / "gateway").parts[0]
    return first.removesuffix(".py")


def _is_unit(root: Path, name: str) -> bool:
    return (root / "gateway" / name).is_dir() or (root / "gateway" / f"{name}.py").is_file()


def _gateway_imports(root: Path, path: Path) -> Iterator[tuple[int, str, str]]:
    """(line, imported module, its unit) for each import of gateway code in `path`,
    relative imports resolved, and `from gateway import console` read as the unit."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            module = ".".join(p for p in (base, node.module or "") if p)
            modules = [module]
            if module == "gateway":  # names imported from gateway/__init__.py, or its units
                modules = [f"gateway.{a.name}" for a in node.names]
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] != "gateway":
                continue
            unit = parts[1] if len(parts) > 1 and _is_unit(root, parts[1]) else "__init__"
            yield node.lineno, module, unit


def _floor_of(unit: str) -> int | None:
    return next((i for i, floor in enumerate(GATEWAY_FLOORS) if unit in floor), None)


def gateway_violations(root: Path) -> list[str]:
    """Every import in gateway/ of a unit on its own floor or above (peers included)."""
    out = []
    for path in sorted((root / "gateway").rglob("*.py")):
        unit = _unit(root, path)
        here = _floor_of(unit)
        if here is None:
            out.append(f"{path.relative_to(root)}: gateway/{unit} is on no floor")
            continue
        for line, module, target in _gateway_imports(root, path):
            there = _floor_of(target)
            if target != unit and (there is None or there <= here):
                out.append(f"{path.relative_to(root)}:{line}: {unit} imports {module}")
    return out


def gateway_circles(root: Path) -> list[list[str]]:
    """The circles of imports between gateway's units, whatever their floors say."""
    edges: dict[str, set[str]] = {}
    for path in sorted((root / "gateway").rglob("*.py")):
        unit = _unit(root, path)
        targets = {target for _, _, target in _gateway_imports(root, path)} - {unit}
        edges.setdefault(unit, set()).update(targets)
    circles: list[list[str]] = []

    def walk(unit: str, trail: list[str]) -> None:
        for target in sorted(edges.get(unit, ())):
            if target == trail[0]:
                circles.append([*trail, target])
            elif target not in trail and target > trail[0]:  # each circle once, from its least
                walk(target, [*trail, target])

    for start in sorted(edges):
        walk(start, [start])
    return circles


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _owner(path: Path, root: Path) -> tuple[str, ...]:
    """What a file is inside of: its package, or in gateway its unit (a subpackage or a
    top module, gateway/__init__.py its own)."""
    parts = path.relative_to(root).with_suffix("").parts
    return parts[:2] if parts[0] == "gateway" else parts[:1]


def private_imports(root: Path) -> list[str]:
    """Every import of another package's (or gateway unit's) private module or name."""
    out = []
    for package in LAYERS:
        for path in sorted((root / package).rglob("*.py")):
            owner = _owner(path, root)
            package_parts = path.relative_to(root).with_suffix("").parts[:-1]
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    named = [alias.name.split(".") for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    base = (
                        package_parts[: len(package_parts) - node.level + 1] if node.level else ()
                    )
                    module = [*base, *(node.module or "").split(".")] if node.module else [*base]
                    named = [[*module, alias.name] for alias in node.names]
                else:
                    continue
                for parts in named:
                    if parts[0] not in LAYERS:
                        continue
                    # a gateway unit's own name (`gateway._roles`) is no private part
                    home = tuple(parts[:2]) if parts[0] == "gateway" else tuple(parts[:1])
                    if home != owner and any(_private(part) for part in parts[len(home) :]):
                        out.append(f"{path.relative_to(root)}:{node.lineno}: {'.'.join(parts)}")
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


def test_no_gateway_floor_imports_upward() -> None:
    assert gateway_violations(ROOT) == []


def test_no_circle_joins_gateways_subpackages() -> None:
    assert gateway_circles(ROOT) == []


def test_every_gateway_unit_is_on_one_floor() -> None:
    units = {_unit(ROOT, path) for path in (ROOT / "gateway").rglob("*.py")}
    placed = [unit for floor in GATEWAY_FLOORS for unit in floor]
    assert sorted(placed) == sorted(units)


def _gateway_tree(root: Path) -> Path:
    """A gateway/ with the real floors' units, empty, to write a bad import into."""
    for floor in GATEWAY_FLOORS:
        for unit in floor - {"__init__"}:
            (root / "gateway" / unit).mkdir(parents=True)
            (root / "gateway" / unit / "__init__.py").write_text("")
    (root / "gateway" / "__init__.py").write_text("")
    return root / "gateway"


def test_the_gateway_rule_can_fail(tmp_path: Path) -> None:
    gateway = _gateway_tree(tmp_path)
    (gateway / "live" / "_bad.py").write_text(
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "import gateway.console\n"
        "if TYPE_CHECKING:\n"
        "    from gateway.service import StoreService\n"
        "def late() -> None:\n"
        "    from gateway import server\n"
        "    from ..mandates import decide\n"  # below: allowed
        "    from . import _calls\n"  # its own unit: allowed
    )
    (gateway / "console" / "_peer.py").write_text("from gateway.client import HttpService\n")
    (gateway / "__init__.py").write_text("from gateway import settings\n")
    (gateway / "orphan").mkdir()
    (gateway / "orphan" / "__init__.py").write_text("")
    assert gateway_violations(tmp_path) == [
        "gateway/__init__.py:1: __init__ imports gateway.settings",
        "gateway/console/_peer.py:1: console imports gateway.client",
        "gateway/live/_bad.py:3: live imports gateway.console",
        "gateway/live/_bad.py:5: live imports gateway.service",
        "gateway/live/_bad.py:7: live imports gateway.server",
        "gateway/orphan/__init__.py: gateway/orphan is on no floor",
    ]


def test_the_circle_check_can_fail(tmp_path: Path) -> None:
    gateway = _gateway_tree(tmp_path)
    (gateway / "live" / "_up.py").write_text("from gateway.operations import OPERATIONS\n")
    (gateway / "operations" / "_down.py").write_text(
        "def f() -> None:\n    import gateway.service\n"
    )
    (gateway / "service" / "_down.py").write_text("from gateway.live import LiveCalls\n")
    assert gateway_circles(tmp_path) == [["live", "operations", "service", "live"]]


def test_every_package_and_gateway_unit_is_used_through_its_face() -> None:
    assert private_imports(ROOT) == []


def test_the_face_rule_can_fail(tmp_path: Path) -> None:
    for package in LAYERS:
        (tmp_path / package).mkdir()
    gateway = _gateway_tree(tmp_path)
    (tmp_path / "evals" / "_bad.py").write_text(
        "from agents._outcome import printable\n"
        "from agents import _outcome\n"
        "import records._store\n"
        "from agents import Manifest\n"  # the face: allowed
        "from evals._cell import run_cell\n"  # its own package: allowed
        "from schema import __version__\n"  # a dunder is no private name
    )
    (gateway / "operations" / "_bad.py").write_text(
        "def late() -> None:\n"
        "    from gateway.service._views import mandate_view\n"
        "    from ..live import _canaries\n"
        "    from gateway.service import mandate_view as shown\n"  # the face: allowed
        "    from ._calls import X\n"  # its own unit: allowed
        "    from gateway.operations._calls import Y\n"  # its own unit: allowed
    )
    assert private_imports(tmp_path) == [
        "evals/_bad.py:1: agents._outcome.printable",
        "evals/_bad.py:2: agents._outcome",
        "evals/_bad.py:3: records._store",
        "gateway/operations/_bad.py:2: gateway.service._views.mandate_view",
        "gateway/operations/_bad.py:3: gateway.live._canaries",
    ]
