"""Every file the packages read at run time goes into the wheel: a file under a package
that is not Python must match one of pyproject.toml's package-data patterns, or an
installed holon (the images, a pip install) fails where the checkout works."""

from __future__ import annotations

import fnmatch
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("gateway", "evals", "schema", "agents", "records")


def _declared() -> dict[str, list[str]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    data: dict[str, list[str]] = config["tool"]["setuptools"]["package-data"]
    return data


def _packaged(path: str, declared: dict[str, list[str]]) -> bool:
    """Whether setuptools' package-data carries `path` (relative to the checkout)."""
    parts = path.split("/")
    for cut in range(1, len(parts)):
        package, rest = ".".join(parts[:cut]), "/".join(parts[cut:])
        patterns = declared.get(package, []) + declared.get("*", [])
        if any(fnmatch.fnmatchcase(rest, p) and rest.count("/") == p.count("/") for p in patterns):
            return True
    return False


def test_every_data_file_of_a_package_is_package_data() -> None:
    tracked = subprocess.run(
        ["git", "ls-files", *PACKAGES], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    data = [p for p in tracked if not p.endswith(".py")]
    declared = _declared()
    missing = [p for p in data if not _packaged(p, declared)]
    assert data, "no data files found: the test reads nothing"
    assert not missing, f"not in pyproject.toml's package-data: {missing}"


def test_a_new_data_folder_is_caught() -> None:
    declared = _declared()
    assert _packaged("schema/entities/agent.json", declared)
    assert not _packaged("schema/elsewhere/agent.json", declared)
    assert _packaged("gateway/console/templates/base.html", declared)
