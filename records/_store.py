"""Opening the store: engine, schema-revision check, migrations, transactions.

One schema for SQLite (embedded default, WAL) and PostgreSQL (psycopg 3). A
process refuses to work on a schema revision other than the code's; the
embedded default upgrades itself, a server database asks for `holon db upgrade`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, OperationalError
from sqlalchemy.orm import Session

from records._health import StoreHealth
from records._pg_probes import CLIENT_KEEPALIVES, SERVER_OPTIONS, ServerProbes, server_of
from records._secrets import KEY_RECIPE, SecretBox
from records._stored_json import read_stored_json
from schema.errors import (
    EnvironmentFault,
    SchemaBehind,
    SchemaMismatch,
    StoreUnavailable,
    UsageError,
)
from schema.jsontext import dumps

T = TypeVar("T")

log = logging.getLogger(__name__)

# The alembic head this code speaks. tests/records/test_migrations.py keeps
# it equal to the single head of records/migrations, so opening a store needs
# one query, not an import of every migration script.
SCHEMA_REVISION = "0024"

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


@dataclass(frozen=True)
class SchemaStatus:
    current: str | None  # None: an empty database
    head: str
    # The oldest holon schema revision whose code still runs on the store's schema, as
    # the store's newest migration declared it (`serves_from`; docs/deploy.md,
    # "Upgrades"). Read only when the store is not at this code's head.
    serves_from: str | None = None

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head

    @property
    def serves_this(self) -> bool:
        """This code (an older release, in a rolling upgrade) may run on the store: its
        schema is newer, and every migration since this code's head only added to it."""
        if self.up_to_date:
            return True
        if self.current is None or self.serves_from is None:
            return False
        return _number(self.serves_from) <= _number(self.head) < _number(self.current)


def _number(revision: str) -> int:
    """A revision's order: its leading digits (revisions are numbered, "0023_…")."""
    digits = revision[: len(revision) - len(revision.lstrip("0123456789"))]
    return int(digits) if digits else -1


# JSON columns keep numbers exact (Decimal in, Decimal out), as everywhere in holon;
# what holon wrote itself reads at any size (records._stored_json), so a row written
# before the number limits (schema.numbers), an old store's million-digit number
# included, still reads.
_JSON_CODEC: dict[str, Any] = {"json_serializer": dumps, "json_deserializer": read_stored_json}


def application_name() -> str:
    """The name a PostgreSQL connection of this process gives itself (pg_stat_activity's
    `application_name`): which holon process holds a lock or runs a statement. Taken at
    connect time, so a forked process names its own connections."""
    return f"holon {os.getpid()}"


def _engine(url: str) -> Engine:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise UsageError(
            f"not a database URL: {url!r}",
            hint="e.g. sqlite:////path/holon.db or postgresql+psycopg://user@host:5432/db",
        ) from None
    try:
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(url, parsed.database)
        if parsed.get_backend_name() == "postgresql":
            if parsed.drivername != "postgresql+psycopg":
                parsed = parsed.set(drivername="postgresql+psycopg")
            engine = create_engine(
                parsed, pool_pre_ping=True, pool_size=10, max_overflow=20, **_JSON_CODEC
            )

            probes = ServerProbes(server_of(parsed))

            @event.listens_for(engine, "do_connect")
            def _connect(dialect: Any, _record: Any, args: Any, params: dict[str, Any]) -> Any:
                params.setdefault("application_name", application_name())  # the URL's wins
                for name, value in CLIENT_KEEPALIVES.items():  # the URL's win too
                    params.setdefault(name, value)
                own = params.pop("options", "")
                if probes.wanted:
                    # The server's before the URL's own options: of a setting given
                    # twice, the last wins.
                    options = f"{SERVER_OPTIONS} {own}".strip()
                    try:
                        return dialect.connect(*args, options=options, **params)
                    except dialect.loaded_dbapi.OperationalError as exc:
                        if not probes.refused(exc, own):
                            raise
                return dialect.connect(*args, **params, **({"options": own} if own else {}))

            return engine
    except NoSuchModuleError:
        pass
    raise UsageError(
        f"unsupported database {parsed.get_backend_name()!r}: holon runs on SQLite or PostgreSQL",
    )


def _sqlite_engine(url: str, database: str | None) -> Engine:
    if database and database != ":memory:":
        try:
            Path(database).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailable(
                f"cannot create the store's folder {Path(database).parent}: {exc.strerror}"
            ) from None
    engine = create_engine(url, connect_args={"timeout": 30}, **_JSON_CODEC)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event issue BEGIN itself (pysqlite's own
        # transaction handling defers it past the first SELECT, which makes
        # read-then-write transactions deadlock-prone).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable against a crashed process (not a lost power
        # supply) in WAL mode, and several times faster than FULL.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        # Writers take the lock up front, so two writers queue instead of
        # failing with "database is locked" on a lock upgrade.
        immediate = conn.get_execution_options().get("holon_write", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def _display(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)


def _unavailable(engine: Engine, exc: BaseException) -> StoreUnavailable:
    reason = (
        str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc) else type(exc).__name__
    )
    return StoreUnavailable(f"cannot reach the store at {_display(engine)}: {reason}")


def schema_status(engine: Engine) -> SchemaStatus:
    try:
        with engine.connect() as conn:
            has_table = engine.dialect.has_table(conn, "alembic_version")
            current = (
                conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
                if has_table
                else None
            )
            serves_from = None
            if current not in (None, SCHEMA_REVISION) and engine.dialect.has_table(
                conn, "schema_compat"
            ):
                serves_from = conn.execute(text("SELECT serves_from FROM schema_compat")).scalar()
    except (OperationalError, DBAPIError) as exc:
        raise _unavailable(engine, exc) from None
    return SchemaStatus(current, SCHEMA_REVISION, serves_from)


def _alembic_config(connection: Any) -> Any:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine, revision: str = "head") -> SchemaStatus:
    """Run migrations up to `revision`; returns the status afterwards."""
    from alembic import command

    before = schema_status(engine)
    if before.current is not None and before.current not in _known_revisions():
        raise _newer(engine, before)
    try:
        with engine.begin() as conn:
            config = _alembic_config(conn)
            command.upgrade(config, revision)
            _declare_serves_from(conn, config)
    except (OperationalError, DBAPIError) as exc:
        raise _unavailable(engine, exc) from None
    after = schema_status(engine)
    log.info("store %s upgraded from %s to %s", _display(engine), before.current, after.current)
    return after


def _declare_serves_from(conn: Any, config: Any) -> None:
    """The store's newest migration's `serves_from` (its own revision where it declares
    none: a migration is taken to change what older code relies on unless it says not),
    kept where older code reads it (`schema_compat`, which older code knows of)."""
    from alembic.script import ScriptDirectory

    current = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    if current is None or not conn.dialect.has_table(conn, "schema_compat"):
        return
    script = ScriptDirectory.from_config(config).get_revision(current)
    serves_from = str(getattr(script.module, "serves_from", current))
    conn.execute(text("UPDATE schema_compat SET serves_from = :s"), {"s": serves_from})


def _known_revisions() -> set[str]:
    from alembic.script import ScriptDirectory

    config = _alembic_config(None)
    return {rev.revision for rev in ScriptDirectory.from_config(config).walk_revisions()}


def _newer(engine: Engine, status: SchemaStatus) -> SchemaMismatch:
    serves = (
        f"; it serves holon from revision {status.serves_from}"
        if status.serves_from is not None
        else ""
    )
    return SchemaMismatch(
        f"the store at {_display(engine)} has schema revision {status.current}, "
        f"newer than this holon understands ({status.head}){serves}",
        hint="upgrade holon itself, or point HOLON_DATABASE_URL at another store",
        details={
            "current": status.current,
            "expected": status.head,
            "serves_from": status.serves_from,
        },
    )


class Store:
    """An open store. Repositories hang off it; sessions are short-lived."""

    def __init__(self, engine: Engine, secret_box: SecretBox | None) -> None:
        self.engine = engine
        self._writer = engine.execution_options(holon_write=True)
        self._secret_box = secret_box
        from records._a2a_tasks import A2ATaskRegistry
        from records._agents import AgentRegistry
        from records._canaries import CanaryRegistry
        from records._certificate_registry import CertificateRegistry
        from records._conformance import ConformanceRegistry
        from records._eval_reports import EvalReportRegistry
        from records._evals import EvalRegistry
        from records._exposure import ExposureRegistry
        from records._identities import IdentityRegistry
        from records._imports import ImportRegistry
        from records._issuers import IssuerRegistry
        from records._keys import KeyRegistry
        from records._ledger import LedgerRegistry
        from records._mandates import MandateRegistry
        from records._sessions import SessionRegistry
        from records._suites import SuiteRegistry
        from records._tokens import TokenRegistry

        self.agents = AgentRegistry(self)
        self.suites = SuiteRegistry(self)
        self.evals = EvalRegistry(self)
        self.eval_reports = EvalReportRegistry(self)
        self.exposure = ExposureRegistry(self)
        self.identities = IdentityRegistry(self)
        self.imports = ImportRegistry(self)
        self.tokens = TokenRegistry(self)
        self.sessions = SessionRegistry(self)
        self.mandates = MandateRegistry(self)
        self.ledger = LedgerRegistry(self)
        self.conformance = ConformanceRegistry(self)
        self.keys = KeyRegistry(self)
        self.certificates = CertificateRegistry(self)
        self.issuers = IssuerRegistry(self)
        self.a2a_tasks = A2ATaskRegistry(self)
        self.canaries = CanaryRegistry(self)
        self.health = StoreHealth(self)
        self.created = False  # set by open_store when it made the schema from nothing

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @property
    def display_url(self) -> str:
        return _display(self.engine)

    @property
    def secret_box(self) -> SecretBox:
        if self._secret_box is None:
            raise EnvironmentFault(
                "HOLON_SECRET_KEY is not set: this shared store needs the key that "
                "encrypts agent secrets and the certificate signing key",
                hint=KEY_RECIPE,
            )
        return self._secret_box

    def read(self) -> AbstractContextManager[Session]:
        """A read-only unit of work."""
        return self._transaction(self.engine)

    def write(self) -> AbstractContextManager[Session]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        return self._transaction(self._writer)

    @contextmanager
    def _transaction(self, engine: Engine) -> Iterator[Session]:
        try:
            with Session(engine, expire_on_commit=False) as session, session.begin():
                yield session
        except OperationalError as exc:
            raise _unavailable(self.engine, exc) from None

    def write_within(self, wait_s: float, work: Callable[[Session], T]) -> T | None:
        """`work` in one write transaction, or None if SQLite's write lock stays taken
        for `wait_s` (nothing is written then).

        For callers on an event loop: a SQLite commit is a fraction of a
        millisecond of local work, cheaper done right there than handed to a
        thread, as long as the loop never stands still waiting for another
        process's writer; the wait is the connection's busy timeout, lowered
        for this transaction. PostgreSQL's writes are network round trips and
        always wait (callers keep them off the loop).
        """
        if self.dialect != "sqlite":
            with self.write() as session:
                return work(session)
        with self._writer.connect() as connection:
            raw = connection.connection.driver_connection
            assert raw is not None
            (previous,) = raw.execute("PRAGMA busy_timeout").fetchone()
            raw.execute(f"PRAGMA busy_timeout = {max(0, int(wait_s * 1000))}")
            try:
                with Session(bind=connection, expire_on_commit=False) as session:
                    with session.begin():
                        return work(session)
            except OperationalError as exc:
                if "locked" in str(exc.orig):
                    return None  # nothing written: BEGIN IMMEDIATE took the lock, or failed
                raise _unavailable(self.engine, exc) from None
            finally:
                raw.execute(f"PRAGMA busy_timeout = {int(previous)}")

    def close(self) -> None:
        # Ledger writes still queued (a settlement after its answer) land first.
        if not self.ledger.drain(timeout=30):
            log.error("ledger writes were still queued after 30 s; closing the store anyway")
        self.ledger.close()
        self.engine.dispose()


def open_store(
    url: str, *, secret_key: bytes | str | None = None, auto_upgrade: bool = False
) -> Store:
    """Open the store at `url`, refusing a schema revision other than the code's, but for
    a newer one that still serves it (a rolling upgrade: `SchemaStatus.serves_this`).

    `auto_upgrade` (the embedded default) migrates an empty or older database
    in place; otherwise the caller is told which `holon db upgrade` to run.
    """
    engine = _engine(url)
    status = schema_status(engine)
    created = False
    newer = (
        not status.up_to_date
        and status.current is not None
        and status.current not in _known_revisions()  # imports every migration: only here
    )
    if newer and status.serves_this:
        # A rolling upgrade: the store is a release ahead, and still serves this one.
        log.warning(
            "the store at %s is at schema revision %s, which still serves this holon (%s): "
            "upgrade this host",
            _display(engine),
            status.current,
            status.head,
        )
    elif not status.up_to_date:
        if newer:
            engine.dispose()
            raise _newer(engine, status)
        if auto_upgrade:
            upgrade(engine)
            created = status.current is None
        else:
            engine.dispose()
            state = (
                "is empty" if status.current is None else f"has schema revision {status.current}"
            )
            raise SchemaBehind(
                f"the store at {_display(engine)} {state}; this holon needs revision {status.head}",
                hint="run `holon db upgrade`",
                details={"current": status.current, "expected": status.head},
            )
    box = SecretBox(secret_key) if secret_key is not None else None
    store = Store(engine, box)
    store.created = created
    return store


def open_engine(url: str) -> Engine:
    """An engine with no schema check (for `holon db upgrade` and `holon db status`)."""
    return _engine(url)
