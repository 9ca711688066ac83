"""bin/_bootstrap.py: the first-run environment is built once, atomically, under a lock."""

from __future__ import annotations

import importlib.util
import threading
import time
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bootstrap() -> ModuleType:
    spec = importlib.util.spec_from_file_location("holon_bootstrap", ROOT / "bin" / "_bootstrap.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    return tmp_path


class FakeInstall:
    """Stands in for venv + pip (the real ones need the network); counts builds."""

    def __init__(self, delay: float = 0.0, fail: BaseException | None = None) -> None:
        self.calls = 0
        self.delay = delay
        self.fail = fail

    def __call__(self, env: Path, root: Path, level: str) -> None:
        self.calls += 1
        (env / "bin").mkdir(parents=True)
        (env / "bin" / "python").write_text("")
        (env / "bin" / "tool").write_text(f"#!{env}/bin/python\nprint('hi')\n")
        time.sleep(self.delay)
        if self.fail is not None:
            raise self.fail


def test_concurrent_first_runs_build_once(project: Path) -> None:
    boot = _bootstrap()
    install = FakeInstall(delay=0.2)
    codes: list[int] = []
    threads = [
        threading.Thread(target=lambda: codes.append(boot.ensure(project, "dev", install)))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert codes == [0, 0, 0, 0]
    assert install.calls == 1
    assert boot.satisfied(project, project / ".venv", "dev")
    # No temporary folders are left behind.
    assert sorted(p.name for p in project.iterdir()) == [".venv", ".venv.lock", "pyproject.toml"]


def test_scripts_point_at_the_final_location(project: Path) -> None:
    boot = _bootstrap()
    boot.ensure(project, "runtime", FakeInstall())
    shebang = (project / ".venv" / "bin" / "tool").read_text().splitlines()[0]
    assert shebang == f"#!{project / '.venv'}/bin/python"


def test_an_interrupted_build_leaves_the_old_environment(project: Path) -> None:
    boot = _bootstrap()
    assert boot.ensure(project, "runtime", FakeInstall()) == 0
    marker = project / ".venv" / "marker"
    marker.write_text("old")
    (project / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "2"\n')
    assert not boot.satisfied(project, project / ".venv", "runtime")
    code = boot.ensure(project, "runtime", FakeInstall(fail=KeyboardInterrupt()))
    assert code == 130
    assert marker.read_text() == "old"  # the previous environment is untouched
    assert not any(p.name.startswith(".venv.tmp-") for p in project.iterdir())


def test_a_failed_install_reports_and_changes_nothing(project: Path) -> None:
    import subprocess

    boot = _bootstrap()
    code = boot.ensure(
        project, "runtime", FakeInstall(fail=subprocess.CalledProcessError(1, ["pip"]))
    )
    assert code == 3
    assert not (project / ".venv").exists()


def test_a_changed_pyproject_rebuilds_and_keeps_extras(project: Path) -> None:
    boot = _bootstrap()
    first = FakeInstall()
    boot.ensure(project, "dev", first)
    assert boot.ensure(project, "runtime", first) == 0 and first.calls == 1  # dev covers runtime
    (project / "pyproject.toml").write_text('[project]\nname = "y"\n')
    second = FakeInstall()
    assert boot.ensure(project, "runtime", second) == 0
    assert second.calls == 1
    assert boot.current(project / ".venv")[1] == "dev"
