"""Shared fixtures: real stores on SQLite and PostgreSQL, created and dropped per test."""

from __future__ import annotations

import importlib
import os
import pkgutil
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from bench._support import postgres_url as throwaway_postgres
from records import Store, new_key, open_store

# The campaigns' totals, printed at the end of a run (also under pytest-xdist).
pytest_plugins = ["tests._campaign_totals"]

DEFAULT_ADMIN_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
# The project's own code, every module of which is loaded before any test runs.
PROJECT_PACKAGES = ("schema", "agents", "records", "evals", "gateway", "examples")
# Not modules to import: alembic runs the migrations' env as a script of its own.
NOT_IMPORTED = ("records.migrations",)


def _let_ctrl_c_through() -> None:
    """Tests send SIGINT to the processes they start (`holon eval`, `holon worker`, a
    watch) and expect Ctrl-C's behaviour. A shell without job control starts a
    background job (`bin/test &`, `nohup bin/test &`) with SIGINT ignored, and an
    ignored signal stays ignored in every child: those processes then never see the
    interrupt (an eval ran to its end, a worker ran on after it). A handler is reset to
    the default in a child at exec, so this process handles SIGINT as Python does by
    default; its children start with it, whatever this run was started with."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_let_ctrl_c_through()

# Gateways the tests start as processes (`holon gateway serve`) inherit this: canaries
# call agents at random among a test's own calls, so only a test that wants them has them.
os.environ.setdefault("HOLON_CANARY_SHARE", "0")
os.environ.setdefault("HOLON_CANARY_FLOOR", "0")


def pytest_configure(config: pytest.Config) -> None:
    """Load every project module first, so that property tests draw the same in any run.

    Hypothesis mixes the literal constants of the local modules loaded so far into its
    draws (`hypothesis.internal.conjecture.providers`), so a derandomized test drew other
    examples in a full run, where more of the project is loaded, than alone, and a
    failure seen in CI could not be replayed by running its file. With the whole project
    loaded up front, the pool is the project's and the same in every run (test files are
    never in it: Hypothesis leaves them out). It costs about 2.5 s a process.
    """
    for top in PROJECT_PACKAGES:
        package = importlib.import_module(top)
        for info in pkgutil.walk_packages(package.__path__, top + "."):
            if info.name.endswith(".__main__") or info.name.startswith(NOT_IMPORTED):
                continue
            importlib.import_module(info.name)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_admin_url() -> str:
    """An admin URL of a reachable PostgreSQL server, or a skip (a failure in CI)."""
    url = os.environ.get("HOLON_TEST_POSTGRES_URL", DEFAULT_ADMIN_URL)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
    except OperationalError as exc:
        message = f"no PostgreSQL server at {url}: {str(exc.orig).strip().splitlines()[0]}"
        if os.environ.get("HOLON_REQUIRE_POSTGRES") == "1":
            pytest.fail(message + " (HOLON_REQUIRE_POSTGRES=1: the PostgreSQL tests must run)")
        pytest.skip(message)
    finally:
        engine.dispose()
    return url


@pytest.fixture
def postgres_url(postgres_admin_url: str) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test, dropped afterwards."""
    with throwaway_postgres(postgres_admin_url, prefix="holon_test_") as url:
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """An empty database URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path_factory.mktemp('store') / 'holon.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    """An upgraded embedded store with a secret key (for tests that need one backend)."""
    with _opened(f"sqlite:///{tmp_path / 'holon.db'}") as opened:
        yield opened


@contextmanager
def _opened(url: str) -> Iterator[Store]:
    opened = open_store(url, secret_key=new_key(), auto_upgrade=True)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An upgraded store with a secret key, on each backend."""
    with _opened(store_url) as opened:
        yield opened


@pytest.fixture
def pg_store(postgres_url: str) -> Iterator[Store]:
    """An upgraded store with a secret key on PostgreSQL only (a fresh database)."""
    with _opened(postgres_url) as opened:
        yield opened
