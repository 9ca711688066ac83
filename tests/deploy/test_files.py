"""deploy/'s files agree with the holon they package, in the fast tier (the images are run
by test_compose.py and test_systemd.py, slow): every holon command they start parses with
holon's own argument parser, the units' defaults are what their commands need, and
docs/deploy.md names every file."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from gateway.cli._app import build_parser

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNITS = sorted((DEPLOY / "systemd").glob("*.service"))


def _parses(argv: list[str]) -> None:
    try:
        build_parser().parse_args(argv)
    except SystemExit as exit_:  # argparse's refusal
        pytest.fail(f"`holon {' '.join(argv)}` does not parse (exit {exit_.code})")


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = YAML(typ="safe").load((DEPLOY / "compose.yaml").read_text())
    return loaded


def test_compose_runs_holon_commands_that_parse() -> None:
    services = _compose()["services"]
    holon = [s for s in services.values() if "HOLON_IMAGE" in str(s.get("image", ""))]
    assert {tuple(w for w in s["command"][:2] if not w.startswith("-")) for s in holon} == {
        ("db", "upgrade"),
        ("gateway", "serve"),
        ("worker",),
    }
    for service in holon:
        _parses(service["command"])
        if service["command"][:2] != ["db", "upgrade"]:
            # They wait for the migration themselves: a dependency on its container
            # would have podman start it again at each of their restarts.
            assert "--wait-for-store" in service["command"]
            assert "depends_on" not in service
        env = service["environment"]
        # Every holon process of the stack shares the store and the key.
        assert "HOLON_DATABASE_URL" in env and "HOLON_SECRET_KEY" in env


def _unit(path: Path) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, value = line.split("=", 1)
            values.setdefault(key.strip(), []).append(value.strip())
    return values


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_units_start_holon_commands_that_parse(unit: Path) -> None:
    values = _unit(unit)
    defaults = dict(
        word.split("=", 1) for line in values.get("Environment", []) for word in shlex.split(line)
    )
    (start,) = values["ExecStart"]
    argv = shlex.split(re.sub(r"\$\{(\w+)\}", lambda m: defaults[m.group(1)], start))
    assert argv[0] == "/opt/holon/bin/holon", "the path deploy/container/Containerfile installs"
    _parses(argv[1:])
    assert values["EnvironmentFile"] == ["/etc/holon/env"]
    # SIGTERM (systemd's default) drains a gateway and hands a worker's cells back.
    assert values.get("KillSignal", ["SIGTERM"]) == ["SIGTERM"]
    if argv[1] == "worker":
        # holon exits 128 + SIGTERM after a SIGTERM it handled: a clean stop.
        assert values["SuccessExitStatus"] == ["143"]


def test_the_image_starts_a_gateway_that_listens_beyond_the_container() -> None:
    text = (DEPLOY / "container/Containerfile").read_text()
    entry = re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M)
    cmd = re.search(r"^CMD (\[.*\])$", text, re.M)
    assert entry and cmd
    argv = json.loads(cmd.group(1))
    assert json.loads(entry.group(1)) == ["holon"]
    _parses(argv)
    assert argv[argv.index("--host") + 1] == "0.0.0.0"


def test_deploy_doc_names_every_file() -> None:
    doc = (ROOT / "docs/deploy.md").read_text()
    for path in sorted(p for p in DEPLOY.rglob("*") if p.is_file()):
        assert str(path.relative_to(ROOT)) in doc, f"docs/deploy.md does not name {path}"
