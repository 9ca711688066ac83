"""The images deploy/build makes, run with podman: what the container and service-unit
tests share.

The tests use images built beforehand (`deploy/build`; .ci/run builds them before the
tests, since a build fetches Debian's packages and the tests stay offline). Without
podman or the images they skip, unless HOLON_REQUIRE_CONTAINERS=1 (CI) makes them fail;
under it the images must also be this checkout's (the commit `deploy/build` labels them
with).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bench._support import free_port as free_port  # the tests import it from here

ROOT = Path(__file__).resolve().parents[2]
IMAGES = (
    "localhost/holon:latest",
    "localhost/holon-postgres:latest",
    "localhost/holon-systemd:latest",
)
REVISION_LABEL = "org.opencontainers.image.revision"


def podman(
    *args: str, check: bool = True, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["podman", *args], check=check, capture_output=True, text=True, timeout=timeout
    )


def _missing() -> str | None:
    if shutil.which("podman") is None:
        return "podman is not installed (Debian: apt-get install podman)"
    for image in IMAGES:
        if podman("image", "exists", image, check=False).returncode != 0:
            return f"{image} is not built (run deploy/build)"
    return None


def _stale() -> str | None:
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    for image in IMAGES:
        labels = json.loads(podman("image", "inspect", image).stdout)[0]["Labels"] or {}
        built = labels.get(REVISION_LABEL)
        if built != head:
            return f"{image} was built from {built}, not HEAD {head} (run deploy/build)"
    return None


def require_images() -> None:
    """Skip (or, under HOLON_REQUIRE_CONTAINERS=1, fail) when the images cannot be run."""
    required = os.environ.get("HOLON_REQUIRE_CONTAINERS") == "1"
    why = _missing() or (_stale() if required else None)
    if why is None:
        return
    if required:
        pytest.fail(f"{why} (HOLON_REQUIRE_CONTAINERS=1: the container tests must run)")
    pytest.skip(why)


def wait_for(condition: Callable[[], bool], what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {seconds:.0f} s waiting for {what}")
        time.sleep(0.5)


def secret_key() -> str:
    from cryptography.fernet import Fernet

    return Fernet.generate_key().decode()
