"""Shared fixtures: real stores on SQLite and PostgreSQL, created and dropped per test."""

from __future__ import annotations

import importlib
import os
import pkgutil
import queue
import secrets
import shutil
import signal
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.pool import NullPool

from bench._support import postgres_url as throwaway_postgres
from records import Store, new_key, open_engine, open_store, upgrade

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
        admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(_NO_FLUSH.format(name=make_url(url).database)))
        finally:
            admin.dispose()
        yield url


# A test that opens an upgraded store (the `store` fixture, or its own over `store_url`)
# gets a copy of a database migrated once per test process instead of running every
# migration itself: about a second less per PostgreSQL test and half a second per SQLite
# one, on two cores. A test that asks for `store_url` alone still gets an empty database
# (tests/records/test_migrations.py upgrades from nothing).
UPGRADED_BY = "store"


@pytest.fixture(scope="session")
def _postgres_template(postgres_admin_url: str) -> Iterator[str]:
    """The name of a PostgreSQL database at the current schema, to copy (CREATE DATABASE
    … TEMPLATE); no connection to it stays open, as a template's copy needs."""
    name = f"holon_tmpl_{secrets.token_hex(6)}"
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        url = make_url(postgres_admin_url).set(database=name)
        engine = open_engine(url.render_as_string(hide_password=False))
        try:
            upgrade(engine)
        finally:
            engine.dispose()
        yield name
    finally:
        pool = _pools.pop((postgres_admin_url, name), None)
        if pool is not None:
            pool.close()
        dropper = _droppers.pop(postgres_admin_url, None)
        if dropper is not None:
            dropper.close()
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


class _Dropper:
    """Drops a test's PostgreSQL database in a thread of its own, so the next test need
    not wait for the server to remove its files (about a second on two busy cores).
    `close` waits for every drop asked for and raises the first that failed."""

    def __init__(self, admin_url: str) -> None:
        self._admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
        self._names: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._failed: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="holon-test-dropper", daemon=True)
        self._thread.start()

    def drop(self, name: str) -> None:
        self._names.put(name)

    def _run(self) -> None:
        while (name := self._names.get()) is not None:
            try:
                with self._admin.connect() as conn:
                    conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            except Exception as exc:  # reported by close()
                self._failed.append(exc)

    def close(self) -> None:
        self._names.put(None)
        self._thread.join()
        self._admin.dispose()
        if self._failed:
            raise self._failed[0]


_droppers: dict[str, _Dropper] = {}


# A test's commits are not flushed to disk before they return: nothing here outlives
# the server, and waiting for the disk took a quarter of the PostgreSQL tests' time.
# Kept by the database (not the server's configuration, which is the machine's).
_NO_FLUSH = 'ALTER DATABASE "{name}" SET synchronous_commit = off'

# What a database copied from the template holds besides its tables' shape: these
# tables' rows (the migrations write them); every other table starts empty.
_SEEDED = ("alembic_version", "schema_compat")

# The shape of the public schema: every table's columns and every index and constraint.
# A test that changed it (a downgrade, a release ahead) leaves a database not reused.
_SHAPE = text(
    """
    SELECT md5(coalesce(string_agg(item, ',' ORDER BY item), '')) FROM (
        SELECT c.relname || '.' || a.attname || ':' || format_type(a.atttypid, a.atttypmod)
            || ':' || a.attnotnull AS item
        FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped
        UNION ALL
        SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
        UNION ALL
        SELECT 'constraint ' || conname || ' ' || pg_get_constraintdef(oid)
        FROM pg_constraint WHERE connamespace = 'public'::regnamespace
    ) shape
    """
)


class _Pool:
    """Databases copied from one template, emptied and handed to the next test instead
    of dropped: a copy costs about 0.15 s of the server's time and its drop as much
    again, emptying one about 0.05 s. A database is reused only if its schema's shape
    and its seeded rows are the template's and nothing is connected to it any more,
    and under a new name; otherwise (or when emptying it waits on a lock something left
    held) it is dropped and the next test gets a fresh copy."""

    def __init__(self, admin_url: str, template: str) -> None:
        self._admin_url = admin_url
        self._template = template
        self._free: list[str] = []
        self._expected: tuple[str, list[tuple[str, ...]]] | None = None

    def url(self, name: str) -> str:
        return make_url(self._admin_url).set(database=name).render_as_string(hide_password=False)

    def acquire(self) -> str:
        if self._free:
            return self._free.pop()
        name = f"holon_test_{secrets.token_hex(6)}"
        admin = create_engine(self._admin_url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"'))
                conn.execute(text(_NO_FLUSH.format(name=name)))
        finally:
            admin.dispose()
        if self._expected is None:
            self._expected = self._state(name)
        return name

    def release(self, name: str) -> None:
        renamed = f"holon_test_{secrets.token_hex(6)}"
        if self._emptied(name) and self._renamed(name, renamed):
            self._free.append(renamed)
        else:
            _dropper(self._admin_url).drop(name)

    def _renamed(self, name: str, new: str) -> bool:
        """Renames a database nothing is connected to (PostgreSQL refuses otherwise), so
        that what an earlier test left behind (a thread, a process, a pool) and still
        holds its URL can never reach the next test's rows."""
        admin = create_engine(self._admin_url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                # Asked first: a rename waits 5 s for other sessions to leave before it fails.
                held = conn.execute(
                    text("SELECT count(*) FROM pg_stat_activity WHERE datname = :name"),
                    {"name": name},
                ).scalar_one()
                if held:
                    return False
                conn.execute(text(f'ALTER DATABASE "{name}" RENAME TO "{new}"'))
        except OperationalError:  # another session connected to it meanwhile
            return False
        finally:
            admin.dispose()
        return True

    def close(self) -> None:
        while self._free:
            _dropper(self._admin_url).drop(self._free.pop())

    def _state(self, name: str) -> tuple[str, list[tuple[str, ...]]]:
        engine = create_engine(self.url(name), poolclass=NullPool)
        try:
            with engine.connect() as conn:
                shape = str(conn.execute(_SHAPE).scalar_one())
                rows = [
                    tuple(str(v) for v in row)
                    for table in _SEEDED
                    for row in conn.execute(text(f'SELECT * FROM "{table}"'))
                ]
            return shape, sorted(rows)
        finally:
            engine.dispose()

    def _emptied(self, name: str) -> bool:
        """Empties the test's tables; False if the database is not fit to reuse."""
        engine = create_engine(self.url(name), poolclass=NullPool)
        try:
            with engine.begin() as conn:
                conn.execute(text("SET LOCAL lock_timeout = '2s'"))
                tables = conn.execute(
                    text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
                ).scalars()
                emptied = ", ".join(f'"{t}"' for t in tables if t not in _SEEDED)
                if emptied:
                    conn.execute(text(f"TRUNCATE {emptied} RESTART IDENTITY CASCADE"))
        except OperationalError:  # a lock held past the timeout: drop it instead
            return False
        finally:
            engine.dispose()
        return self._state(name) == self._expected


_pools: dict[tuple[str, str], _Pool] = {}


def _dropper(admin_url: str) -> _Dropper:
    if admin_url not in _droppers:
        _droppers[admin_url] = _Dropper(admin_url)
    return _droppers[admin_url]


@contextmanager
def upgraded_postgres(admin_url: str, template: str) -> Iterator[str]:
    """A PostgreSQL database at the current schema with empty tables, copied from
    `template` or emptied after an earlier test (`_Pool`); its URL."""
    pool = _pools.setdefault((admin_url, template), _Pool(admin_url, template))
    name = pool.acquire()
    try:
        yield pool.url(name)
    finally:
        pool.release(name)


@pytest.fixture
def _upgraded_postgres_url(postgres_admin_url: str, _postgres_template: str) -> Iterator[str]:
    """A fresh PostgreSQL database at the current schema for one test, dropped afterwards."""
    with upgraded_postgres(postgres_admin_url, _postgres_template) as url:
        yield url


@pytest.fixture(scope="session")
def _sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An embedded store's file at the current schema, to copy."""
    path = tmp_path_factory.mktemp("template") / "holon.db"
    engine = open_engine(f"sqlite:///{path}")
    try:
        upgrade(engine)
    finally:
        engine.dispose()
    return path


def sqlite_copy(template: Path, folder: Path) -> str:
    """A copy of the embedded store's `template` in `folder`; its URL."""
    path = folder / "holon.db"
    shutil.copyfile(template, path)
    return f"sqlite:///{path}"


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database URL, once per backend: empty, or at the current schema for a test that
    opens an upgraded store (UPGRADED_BY among its fixtures)."""
    upgraded = UPGRADED_BY in request.fixturenames
    if request.param == "sqlite":
        folder = tmp_path_factory.mktemp("store")
        if upgraded:
            return sqlite_copy(request.getfixturevalue("_sqlite_template"), folder)
        return f"sqlite:///{folder / 'holon.db'}"
    url: str = request.getfixturevalue("_upgraded_postgres_url" if upgraded else "postgres_url")
    return url


def _opened(url: str) -> Iterator[Store]:
    """An upgraded store at `url` with a new secret key, closed when the test is done."""
    opened = open_store(url, secret_key=new_key(), auto_upgrade=True)
    opened.created = True  # made from nothing, as far as the test can tell
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def sqlite_store(tmp_path: Path, _sqlite_template: Path) -> Iterator[Store]:
    """An upgraded embedded store with a secret key (for tests that need one backend)."""
    yield from _opened(sqlite_copy(_sqlite_template, tmp_path))


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    """An upgraded store with a secret key, on each backend."""
    yield from _opened(store_url)


@pytest.fixture
def pg_store(postgres_url: str) -> Iterator[Store]:
    """An upgraded store with a secret key on PostgreSQL only (the test's `postgres_url`,
    which the test may open itself too)."""
    yield from _opened(postgres_url)


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def module_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Store]:
    """An upgraded store with a secret key, on each backend, shared by a module's tests
    (for tests that only read what a module-scoped fixture wrote)."""
    with ExitStack() as stack:
        if request.param == "sqlite":
            template = request.getfixturevalue("_sqlite_template")
            url = sqlite_copy(template, tmp_path_factory.mktemp("store"))
        else:
            admin = request.getfixturevalue("postgres_admin_url")
            template = request.getfixturevalue("_postgres_template")
            url = stack.enter_context(upgraded_postgres(admin, template))
        yield from _opened(url)
