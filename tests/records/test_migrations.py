"""Migrations: one head, the code's revision is that head, models match the migrations."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, inspect, text

from records import SCHEMA_REVISION, open_engine, open_store, schema_status, upgrade
from records._models import Base
from records._store import MIGRATIONS_DIR, _alembic_config
from schema.errors import SchemaMismatch, StoreUnavailable, UsageError


def _script() -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config)


def test_exactly_one_head() -> None:
    heads = _script().get_heads()
    assert len(heads) == 1, f"the migrations have {len(heads)} heads: {heads}; merge them"


def test_code_revision_is_the_head() -> None:
    assert _script().get_current_head() == SCHEMA_REVISION


def test_upgrade_from_empty_matches_the_models(store_url: str) -> None:
    engine = open_engine(store_url)
    try:
        assert schema_status(engine).current is None
        status = upgrade(engine)
        assert status.current == SCHEMA_REVISION and status.up_to_date
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert diff == [], f"models and migrations disagree: {diff}"
        # Upgrading again is a no-op.
        assert upgrade(engine).current == SCHEMA_REVISION
    finally:
        engine.dispose()


def _downgrade(engine: Engine, revision: str) -> None:
    """The schema taken down to `revision` by alembic, as an operator would."""
    from alembic import command

    with engine.begin() as conn:
        command.downgrade(_alembic_config(conn), revision)
    assert schema_status(engine).current == revision


def test_the_rate_take_migration_downgrades_and_upgrades_again(store_url: str) -> None:
    """0016 replaces holon_ledger_apply (PostgreSQL) and adds holon_rate_level; its
    downgrade puts 0013's function back and drops the helper; upgrading again restores it.
    On SQLite it changes nothing either way."""
    engine = open_engine(store_url)
    postgres = engine.dialect.name == "postgresql"
    probe = "SELECT count(*) FROM pg_proc WHERE proname = 'holon_rate_level'"
    body = "SELECT prosrc FROM pg_proc WHERE proname = 'holon_ledger_apply'"

    def functions() -> tuple[int, str] | None:
        if not postgres:
            return None
        with engine.connect() as conn:
            return conn.execute(text(probe)).scalar_one(), conn.execute(text(body)).scalar_one()

    try:
        upgrade(engine, "0016")
        assert schema_status(engine).current == "0016"
        head = functions()
        _downgrade(engine, "0015")
        down = functions()
        if head is not None and down is not None:
            assert head[0] == 1 and "holon_rate_level" in head[1]
            assert down[0] == 0 and "holon_rate_level" not in down[1]
            assert "SET level = (lvl - unit)::bigint" in down[1]  # 0013's separate write
        upgrade(engine, "0016")
        assert functions() == head
        upgrade(engine)
        assert schema_status(engine).current == SCHEMA_REVISION
    finally:
        engine.dispose()


def test_the_lone_write_migration_downgrades_and_upgrades_again(store_url: str) -> None:
    """0018 replaces holon_ledger_apply (PostgreSQL); its downgrade puts 0016's back, and
    upgrading again restores it. On SQLite it changes nothing either way."""
    engine = open_engine(store_url)
    body = "SELECT prosrc FROM pg_proc WHERE proname = 'holon_ledger_apply'"

    def function() -> str | None:
        if engine.dialect.name != "postgresql":
            return None
        with engine.connect() as conn:
            return str(conn.execute(text(body)).scalar_one())

    try:
        upgrade(engine, "0018")
        head = function()
        _downgrade(engine, "0017")
        down = function()
        if head is not None and down is not None:
            assert "lone boolean" in head and "lone boolean" not in down
        upgrade(engine)
        assert schema_status(engine).current == SCHEMA_REVISION
        assert function() == head
    finally:
        engine.dispose()


def test_server_store_refuses_an_empty_schema(store_url: str) -> None:
    with pytest.raises(SchemaMismatch) as caught:
        open_store(store_url)
    assert "holon db upgrade" in (caught.value.hint or "")
    assert caught.value.exit_code == 3


def test_embedded_store_upgrades_itself(store_url: str) -> None:
    store = open_store(store_url, auto_upgrade=True)
    try:
        assert schema_status(store.engine).up_to_date
        assert {"agents", "agent_versions", "agent_secrets"} <= set(
            inspect(store.engine).get_table_names()
        )
    finally:
        store.close()


def test_a_newer_schema_is_refused_even_with_auto_upgrade(store_url: str) -> None:
    engine = open_engine(store_url)
    upgrade(engine)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999_future'"))
        # A future release that serves only itself (tests/records/test_rolling_upgrade.py
        # has one that serves this holon).
        conn.execute(text("UPDATE schema_compat SET serves_from = '9999_future'"))
    engine.dispose()
    with pytest.raises(SchemaMismatch, match="newer than this holon"):
        open_store(store_url, auto_upgrade=True)


def test_an_unreachable_store_is_an_environment_error() -> None:
    with pytest.raises(StoreUnavailable) as caught:
        open_store("postgresql+psycopg://nobody@127.0.0.1:1/none")
    assert caught.value.exit_code == 3
    assert "127.0.0.1:1" in str(caught.value)


def test_a_password_never_appears_in_errors() -> None:
    with pytest.raises(StoreUnavailable) as caught:
        open_store("postgresql+psycopg://user:hunter2@127.0.0.1:1/none")
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize("url", ["mysql://x@localhost/db", "not a url at all"])
def test_unsupported_urls_are_usage_errors(url: str) -> None:
    with pytest.raises(UsageError):
        open_store(url)


def test_sqlite_runs_in_wal_mode(tmp_path: object) -> None:
    url = f"sqlite:///{tmp_path}/w.db"
    store = open_store(url, auto_upgrade=True)
    try:
        with store.engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
    finally:
        store.close()


def test_the_kept_reports_table_goes_down_and_up_again(store_url: str) -> None:
    """0017 (eval_reports) goes down cleanly from the head, rows and all, and back up."""
    engine = open_engine(store_url)
    try:
        upgrade(engine)
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO evals (id, agent_id, agent_version, plan, plan_digest, full_plan,"
                    " status, cells_total, created_at) VALUES ('ev_1', 'a/b', '1', '{}', 'd',"
                    " false, 'done', 0, '2026-12-01 00:00:00')"
                )
            )
            conn.execute(
                text(
                    "INSERT INTO eval_reports (eval_id, audience, form, key, compressed, body,"
                    " created_at) VALUES ('ev_1', 'operator', 'html', :key, false, :body,"
                    " '2026-12-01 00:00:00')"
                ),
                {"key": "k" * 64, "body": b"<html>"},
            )
        _downgrade(engine, "0016")
        assert "eval_reports" not in inspect(engine).get_table_names()
        status = upgrade(engine)
        assert status.current == SCHEMA_REVISION and status.up_to_date
        assert "eval_reports" in inspect(engine).get_table_names()
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM eval_reports")).scalar() == 0
            diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
        assert diff == []
    finally:
        engine.dispose()


def test_the_instance_set_migration_counts_every_reveal_already_shown(store_url: str) -> None:
    """0020 starts each instance set's count (its budget, the gate's k) from every org's
    reveals already made, not from zero: a store upgraded mid-attack forgets none."""
    engine = open_engine(store_url)
    rows = [
        ("one", "s1", "a", 3),
        ("two", "s1", "a", 2),
        ("one", "s1", "b", 1),
        ("one", "s2", "a", 4),
    ]
    try:
        upgrade(engine, "0019")
        with engine.begin() as conn:
            for org, suite, instance_set, revealed in rows:
                conn.execute(
                    text(
                        "INSERT INTO holdout_exposure (org, suite_id, instance_set, label, spent, "
                        "revealed, updated_at) VALUES (:org, :suite, :set, 'x', 0, :n, :at)"
                    ),
                    {
                        "org": org,
                        "suite": suite,
                        "set": instance_set,
                        "n": revealed,
                        "at": "2026-12-01 00:00:00",
                    },
                )
        upgrade(engine)
        with engine.connect() as conn:
            counted = conn.execute(
                text("SELECT suite_id, instance_set, revealed FROM instance_set_exposure")
            ).all()
        assert sorted(tuple(r) for r in counted) == [("s1", "a", 5), ("s1", "b", 1), ("s2", "a", 4)]
    finally:
        engine.dispose()


def test_the_pool_migration_adds_a_column_no_earlier_version_fills(store_url: str) -> None:
    """0023 adds `suite_versions.holdout_pool_cases` and `holdout_pool_epochs`, NULL (no
    pool) for every version installed before; its downgrade drops them, and upgrading again
    restores them."""

    def columns(engine: Engine) -> set[str]:
        return {c["name"] for c in inspect(engine).get_columns("suite_versions")}

    engine = open_engine(store_url)
    try:
        upgrade(engine, "0022")
        added = {"holdout_pool_cases", "holdout_pool_epochs"}
        assert not added & columns(engine)
        upgrade(engine)
        assert added <= columns(engine)
        for column in inspect(engine).get_columns("suite_versions"):
            assert column["name"] not in added or column["nullable"]
        _downgrade(engine, "0022")
        assert not added & columns(engine)
        upgrade(engine)
        assert schema_status(engine).current == SCHEMA_REVISION
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
    finally:
        engine.dispose()
