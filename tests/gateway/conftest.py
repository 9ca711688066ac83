from __future__ import annotations

from pathlib import Path

import pytest

from tests.gateway._cli import CLI


@pytest.fixture
def cli(tmp_path: Path) -> CLI:
    """The CLI on a fresh embedded store under a temporary HOLON_HOME."""
    return CLI(tmp_path / "home")
