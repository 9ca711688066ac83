"""`--wait-for-store` (`holon gateway serve`, `holon worker`): a process started beside
its database and `holon db upgrade` waits for the store to answer at its schema, saying
what it waits for, instead of exiting to be restarted; what waiting cannot fix (a store
newer than this holon) stops it at once, and a wait that runs out exits 3."""

from __future__ import annotations

import contextlib
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from gateway.service import StoreService
from gateway.settings import Settings
from records import new_key, open_engine, upgrade
from schema.errors import SchemaBehind, SchemaMismatch
from tests.conftest import sqlite_copy
from tests.gateway._cli import CLI


def _settings(url: str, home: Path) -> Settings:
    return Settings.from_env(
        {
            "HOLON_DATABASE_URL": url,
            "HOLON_HOME": str(home),
            "HOLON_SECRET_KEY": new_key().decode(),
            "HOLON_EXAMPLES": "off",
        }
    )


def _upgrade(url: str) -> None:
    engine = open_engine(url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()


@contextlib.contextmanager
def _later(action: Callable[[], None], after_s: float = 1.0) -> Iterator[None]:
    """`action` in a thread of its own after `after_s`; joined (and its failure raised)
    when the block ends."""
    failed: list[BaseException] = []

    def run() -> None:
        time.sleep(after_s)
        try:
            action()
        except BaseException as exc:  # raised in the test's thread below
            failed.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        thread.join()
    if failed:
        raise failed[0]


def test_a_store_upgraded_meanwhile_is_waited_for(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'holon.db'}"
    lines: list[str] = []
    started = time.monotonic()
    with _later(lambda: _upgrade(url)):
        service = StoreService.from_settings(
            _settings(url, tmp_path), wait_s=60, report=lines.append
        )
    try:
        assert time.monotonic() - started >= 1.0
        assert service.store.agents.list().items == []
    finally:
        service.close()
    assert lines[0].startswith("waiting for the store (up to 60 s more): the store at sqlite:///")
    assert "is empty; this holon needs revision" in lines[0]
    # Said once per thing waited for, not once a second.
    assert len(lines) <= 3 and all(line.startswith("waiting for the store") for line in lines)


@pytest.mark.postgres
def test_a_database_not_there_yet_is_waited_for(
    postgres_admin_url: str, _postgres_template: str, tmp_path: Path
) -> None:
    name = f"holon_test_{secrets.token_hex(6)}"
    url = make_url(postgres_admin_url).set(database=name).render_as_string(hide_password=False)
    admin = create_engine(postgres_admin_url, isolation_level="AUTOCOMMIT")

    def create() -> None:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{_postgres_template}"'))

    lines: list[str] = []
    try:
        with _later(create):
            service = StoreService.from_settings(
                _settings(url, tmp_path), wait_s=60, report=lines.append
            )
        service.close()
        assert len(lines) == 1, lines
        assert lines[0].startswith("waiting for the store (up to 60 s more): cannot reach")
        assert f'database "{name}" does not exist' in lines[0]
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_a_newer_store_stops_it_at_once(_sqlite_template: Path, tmp_path: Path) -> None:
    url = sqlite_copy(_sqlite_template, tmp_path)
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        conn.execute(text("UPDATE schema_compat SET serves_from = '9999'"))
    engine.dispose()
    lines: list[str] = []
    started = time.monotonic()
    with pytest.raises(SchemaMismatch, match="newer than this holon understands") as raised:
        StoreService.from_settings(_settings(url, tmp_path), wait_s=60, report=lines.append)
    assert not isinstance(raised.value, SchemaBehind)
    assert time.monotonic() - started < 10
    assert lines == []


def test_a_wait_that_runs_out_raises_what_it_waited_for(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'holon.db'}"
    lines: list[str] = []
    started = time.monotonic()
    with pytest.raises(SchemaBehind, match="is empty"):
        StoreService.from_settings(_settings(url, tmp_path), wait_s=1.5, report=lines.append)
    assert time.monotonic() - started >= 1.5
    assert len(lines) == 2
    assert re.match(
        r"waiting for the store \(up to [12] s more\): the store at .* is empty", lines[0]
    )
    assert lines[1] == "gave up waiting for the store after 1.5 s"


def test_without_the_flag_a_behind_store_exits_3_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'holon.db'}"
    cli = CLI(tmp_path / "home", HOLON_DATABASE_URL=url, HOLON_SECRET_KEY=new_key().decode())
    result = cli("worker", "--once")
    assert result.code == 3
    assert "is empty; this holon needs revision" in result.stderr
    assert "waiting" not in result.stderr
    assert "Traceback" not in result.stderr


def test_the_worker_waits_then_works(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'holon.db'}"
    cli = CLI(tmp_path / "home", HOLON_DATABASE_URL=url, HOLON_SECRET_KEY=new_key().decode())
    with _later(lambda: _upgrade(url)):
        result = cli("worker", "--once", "--wait-for-store", "60", "--json")
    assert result.code == 0, result.stderr
    assert "waiting for the store (up to 60 s more)" in result.stderr
    assert result.json()["evals_worked"] == []


@pytest.mark.parametrize("value", ["-1", "nan", "soon"])
def test_a_bad_wait_is_a_usage_error(tmp_path: Path, value: str) -> None:
    result = CLI(tmp_path / "home")("worker", "--once", "--wait-for-store", value)
    assert result.code == 2
    assert "--wait-for-store" in result.stderr
    assert "number of seconds" in result.stderr
    result = CLI(tmp_path / "home")("gateway", "serve", "--wait-for-store", value)
    assert result.code == 2
    assert "number of seconds" in result.stderr
