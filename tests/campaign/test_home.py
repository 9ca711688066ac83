"""HOLON_HOME that cannot be used, and disks that are full: a clear error, exit 3, no traceback.

Tests may run as root, for whom `chmod 0o555` stops nothing; the faults that
hold for every user are made instead: HOLON_HOME is a regular file, or lies
under one (so no folder can be made there), or its store or key file is
something else than it should be. The permission case runs where it can.
A full disk is /dev/full, which refuses every write with ENOSPC.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.campaign._tally import record
from tests.gateway._cli import CLI, Result

SUITE = Path(__file__).resolve().parents[2] / "examples" / "suites" / "ticket-classify"


def _clear(result: Result, words: str, code: int = 3) -> None:
    text = result.stdout + result.stderr
    assert result.code == code, text
    assert words in result.stderr, result.stderr
    assert "Traceback" not in text and "internal error" not in text, text
    assert "bug in holon" not in text, text
    record("HOLON_HOME and full disks", f"exit {code}")


def _file_home(t: Path) -> Path:
    (t / "home").write_text("not a folder")
    return t / "home"


def _under_file(t: Path) -> Path:
    (t / "file").write_text("x")
    return t / "file" / "home"


def _store_folder(t: Path) -> Path:
    (t / "home" / "holon.db").mkdir(parents=True)
    return t / "home"


def _store_garbage(t: Path) -> Path:
    (t / "home").mkdir()
    (t / "home" / "holon.db").write_bytes(b"garbage" * 1000)
    return t / "home"


def _key_folder(t: Path) -> Path:
    (t / "home" / "secret.key").mkdir(parents=True)
    return t / "home"


# name: (makes a broken HOLON_HOME under a temporary folder, what the error says)
HOMES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "a regular file": (_file_home, "Not a directory"),
    "under a regular file": (_under_file, "Not a directory"),
    "store is a folder": (_store_folder, "cannot reach the store"),
    "store is not a database": (_store_garbage, "file is not a database"),
    "key file is a folder": (_key_folder, "cannot use the secret key file"),
}
COMMANDS = [
    ("suites", "list"),
    ("agents", "list"),
    ("suites", "add", str(SUITE)),
    ("agents", "register", str(SUITE.parents[1] / "agents" / "acme-ticket-triage.yaml")),
]


@pytest.mark.parametrize("home", sorted(HOMES))
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_an_unusable_home_is_a_clear_environment_error(
    tmp_path: Path, home: str, command: tuple[str, ...]
) -> None:
    make, words = HOMES[home]
    where = make(tmp_path)
    assert where.is_relative_to(tmp_path)

    def files() -> list[str]:
        # The key file is made before the store is opened, on first use: not a
        # write of the command's own.
        return sorted(str(p) for p in tmp_path.rglob("*") if p.name != "secret.key")

    before = files()
    _clear(CLI(where)(*command), words)
    as_json = CLI(where)(*command, "--json")
    assert as_json.code == 3 and as_json.json()["error"]["code"] in {
        "environment",
        "store_unavailable",
        "store_error",
    }
    assert files() == before, "a failed command wrote files"


def test_a_read_only_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o555)
    try:
        probe = home / "probe"
        try:
            probe.write_text("x")
        except PermissionError:
            pass
        else:
            probe.unlink()
            pytest.skip("permissions stop nothing here (root): the cases above cover it")
        _clear(CLI(home)("suites", "list"), "Permission denied")
        assert list(home.iterdir()) == []
    finally:
        home.chmod(0o755)


def test_a_damaged_trust_list_is_the_environments_fault(tmp_path: Path) -> None:
    cli = CLI(tmp_path / "home")
    assert cli("suites", "list").code == 0
    trust = tmp_path / "home" / "trusted-extensions.json"
    trust.write_text("{not json", encoding="utf-8")
    _clear(cli("suites", "trust", str(SUITE)), "the trust list")
    assert trust.read_text(encoding="utf-8") == "{not json"  # nothing half-written over it
    trust.unlink()
    trust.mkdir()
    _clear(cli("suites", "trust", str(SUITE)), "cannot read the trust list")


@pytest.mark.parametrize("output", ["/dev/full"])
def test_a_full_disk_under_fixtures_render(tmp_path: Path, output: str) -> None:
    result = CLI(tmp_path / "home")("fixtures", "render", "invoice", "--seed", "3", "-o", output)
    _clear(result, "No space left on device")
    assert os.path.exists(output)
