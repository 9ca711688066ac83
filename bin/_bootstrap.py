"""Create or refresh the checkout's virtual environment, safely.

Run by bin/holon, bin/test and bin/check when `.venv` is missing or stale.
Contract:

* The environment is built in a temporary folder beside `.venv` and renamed
  into place only once it is complete, so an interrupted build never leaves a
  broken `.venv` behind.
* The whole build runs under an exclusive lock (`.venv.lock`), and the need
  is re-checked once the lock is held, so concurrent first runs build once.
* `.venv/.holon-stamp` records the checksum of pyproject.toml and which
  extras were installed; a later run rebuilds only when pyproject.toml changed
  or it needs extras that are missing (bin/test needs `dev`).

Usage: python3 bin/_bootstrap.py ROOT LEVEL   (LEVEL: runtime | dev)
Only the standard library is used: nothing else exists yet.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import venv
from collections.abc import Callable
from pathlib import Path

LEVELS = {"runtime": 0, "dev": 1}


def stamp_of(root: Path) -> str:
    data = (root / "pyproject.toml").read_bytes()
    return hashlib.sha256(data).hexdigest()


def current(venv_dir: Path) -> tuple[str, str] | None:
    try:
        digest, level = (venv_dir / ".holon-stamp").read_text().split()
    except (OSError, ValueError):
        return None
    return digest, level


def satisfied(root: Path, venv_dir: Path, level: str) -> bool:
    have = current(venv_dir)
    if have is None or not (venv_dir / "bin" / "python").exists():
        return False
    return have[0] == stamp_of(root) and LEVELS.get(have[1], -1) >= LEVELS[level]


def say(message: str) -> None:
    sys.stderr.write(f"holon: {message}\n")
    sys.stderr.flush()


def requirements(root: Path, level: str) -> list[str]:
    """The project's dependencies (and the dev extra) as pyproject.toml declares them."""
    with (root / "pyproject.toml").open("rb") as fh:
        project = tomllib.load(fh)["project"]
    needed = list(project["dependencies"])
    if level == "dev":
        needed += project.get("optional-dependencies", {}).get("dev", [])
    return needed


def pip_install(env: Path, root: Path, level: str) -> None:
    """Create a virtual environment at `env` with the project's dependencies.

    The checkout itself goes on sys.path through a `.pth` file rather than an
    editable install: the packages, examples/ and tests/ are imported from the
    working tree, with no build step and no reliance on setuptools' editable
    modes.
    """
    venv.EnvBuilder(with_pip=True, clear=True).create(env)
    py = str(env / "bin" / "python")
    pip = [py, "-m", "pip", "--disable-pip-version-check", "--no-input", "-q"]
    subprocess.run([*pip, "install", "--upgrade", "pip"], check=True)
    subprocess.run([*pip, "install", *requirements(root, level)], check=True)
    purelib = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(purelib) / "holon-checkout.pth").write_text(f"{root}\n")


Installer = Callable[[Path, Path, str], None]


def build(root: Path, venv_dir: Path, level: str, install: Installer = pip_install) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=".venv.tmp-", dir=root))
    try:
        say(f"setting up the environment in {venv_dir} (first run, or pyproject.toml changed)")
        install(tmp, root, level)
        (tmp / ".holon-stamp").write_text(f"{stamp_of(root)} {level}\n")
        fix_scripts(tmp, venv_dir)
        old = None
        if venv_dir.exists():
            old = Path(tempfile.mkdtemp(prefix=".venv.old-", dir=root))
            os.rename(venv_dir, old / "venv")
        os.rename(tmp, venv_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def fix_scripts(tmp: Path, final: Path) -> None:
    """Point console-script shebangs at the final location, not the temporary one."""
    old, new = str(tmp).encode(), str(final).encode()
    for script in (tmp / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        data = script.read_bytes()
        if data.startswith(b"#!") and old in data:
            script.write_bytes(data.replace(old, new))


def main() -> int:
    root = Path(sys.argv[1]).resolve()
    level = sys.argv[2] if len(sys.argv) > 2 else "runtime"
    return ensure(root, level)


def ensure(root: Path, level: str, install: Installer = pip_install) -> int:
    """Make `root/.venv` satisfy `level`; an exit status (0 ok)."""
    if level not in LEVELS:
        say(f"unknown environment level {level!r}")
        return 2
    if sys.version_info < (3, 11):  # noqa: UP036 - runs under whatever python3 is
        say("holon needs Python >= 3.11 (set HOLON_PYTHON to one)")
        return 3
    venv_dir = root / ".venv"
    with open(root / ".venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if satisfied(root, venv_dir, level):
            return 0
        # A newer pyproject keeps the extras that were there before.
        have = current(venv_dir)
        if have and LEVELS.get(have[1], -1) > LEVELS[level]:
            level = have[1]
        try:
            build(root, venv_dir, level, install)
        except subprocess.CalledProcessError as exc:
            say(f"environment set-up failed ({exc}); nothing was changed, run again to retry")
            return 3
        except KeyboardInterrupt:
            say("interrupted; the environment was left as it was")
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
