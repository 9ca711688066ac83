"""The console tests' fixtures: the world of roles and pages they sign in to, and the
browser the in-browser tests drive."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from records import Store
from tests.gateway.console._browser import browser
from tests.gateway.console._world import World, world


@pytest.fixture
def console(sqlite_store: Store, tmp_path: Path) -> Iterator[World]:
    with world(sqlite_store, tmp_path) as built:
        yield built


@pytest.fixture
def chromium() -> Iterator[Any]:
    with browser() as launched:
        yield launched
