"""Rolling upgrades: a store one release ahead still serves this holon when every migration
since this holon's head only added to the schema (`serves_from`, docs/deploy.md,
"Upgrades"). The next release is played by migrations written here: one that adds a table
and a nullable column (serves this holon), one that drops that column (does not). While
this holon's gateway serves live calls and an eval on the added-to store, "the next
release" writes its new table and column at the same time; the drop is refused at open."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text

from records import (
    SCHEMA_REVISION,
    _store,
    new_key,
    open_engine,
    open_store,
    schema_status,
    upgrade,
)
from records._store import MIGRATIONS_DIR
from schema.errors import SchemaMismatch
from tests.gateway._cli import CLI
from tests.gateway.server._gateway import install_tiny, mandate, register_triage, running_gateway

ROOT = Path(__file__).resolve().parents[2]
# The first migration that declares what older code it serves.
FIRST_DECLARING = 24

NEXT = f'''"""The next release's migration: only adds."""
from alembic import op
import sqlalchemy as sa

revision = "9001"
down_revision = "{SCHEMA_REVISION}"
branch_labels = None
depends_on = None
serves_from = "{SCHEMA_REVISION}"


def upgrade() -> None:
    op.create_table("next_notes", sa.Column("id", sa.Integer(), primary_key=True),
                    sa.Column("note", sa.String(100), nullable=False))
    op.add_column("agents", sa.Column("next_note", sa.String(100), nullable=True))


def downgrade() -> None:
    op.drop_column("agents", "next_note")
    op.drop_table("next_notes")
'''

CONTRACT = '''"""The release after: a migration that declares it serves only its own code."""
from alembic import op

revision = "9002"
down_revision = "9001"
branch_labels = None
depends_on = None
serves_from = "9002"


def upgrade() -> None:
    op.drop_table("next_notes")


def downgrade() -> None:
    raise NotImplementedError
'''


def _ticket() -> dict[str, Any]:
    found = json.loads((ROOT / "schema/capabilities/ticket.classify.input.json").read_text())
    example: dict[str, Any] = found["examples"][0]
    return example


def _script() -> ScriptDirectory:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config)


def _number(revision: str) -> int:
    return int(revision.split("_", 1)[0])


def test_every_migration_since_the_marker_declares_what_it_serves() -> None:
    script = _script()
    declared: dict[str, int] = {}
    for rev in reversed(list(script.walk_revisions())):
        if _number(rev.revision) < FIRST_DECLARING:
            continue
        serves = getattr(rev.module, "serves_from", None)
        assert isinstance(serves, str), f"migration {rev.revision} declares no serves_from"
        assert _number(serves) <= _number(rev.revision), rev.revision
        before = declared.get(str(rev.down_revision))
        # Code that did not run on the schema before cannot run on this one.
        assert before is None or _number(serves) >= before, rev.revision
        declared[rev.revision] = _number(serves)


@pytest.fixture
def next_release(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder of the next releases' migrations, beside the real ones."""
    folder = tmp_path / "next_versions"
    folder.mkdir()
    (folder / "9001_next.py").write_text(NEXT)
    (folder / "9002_contract.py").write_text(CONTRACT)
    yield folder


def _upgrade_to(url: str, folder: Path, revision: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`holon db upgrade` as the next release runs it: with its own migrations known."""
    real = _store._alembic_config

    def with_next(connection: object) -> Config:
        config: Config = real(connection)
        config.set_main_option("path_separator", "os")
        config.set_main_option(
            "version_locations", os.pathsep.join([str(MIGRATIONS_DIR / "versions"), str(folder)])
        )
        return config

    engine = open_engine(url)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(_store, "_alembic_config", with_next)
            assert upgrade(engine, revision).current == revision
    finally:
        engine.dispose()


def test_a_store_a_release_ahead_serves_this_holon_while_the_next_writes(
    store_url: str,
    next_release: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine = open_engine(store_url)
    upgrade(engine)
    engine.dispose()
    _upgrade_to(store_url, next_release, "9001", monkeypatch)
    engine = open_engine(store_url)
    status = schema_status(engine)
    engine.dispose()
    assert (status.current, status.serves_from, status.serves_this) == (
        "9001",
        SCHEMA_REVISION,
        True,
    )

    cli = CLI(tmp_path / "cli", HOLON_DATABASE_URL=store_url, HOLON_SECRET_KEY=new_key().decode())
    shown = cli("db", "status", "--json").json()
    assert (shown["up_to_date"], shown["serves_this"]) == (False, True)
    doctor = {f["check"]: f for f in cli("doctor", "--json").json()["findings"]}
    assert doctor["store"]["level"] == "warn" and "still serves it" in doctor["store"]["detail"]

    with caplog.at_level(logging.WARNING, logger="records._store"):
        store = open_store(store_url, secret_key=new_key())
    assert "which still serves this holon" in caplog.text
    stop = threading.Event()
    written: list[int] = []

    def the_next_release() -> None:
        """The next release's processes at the same time: its new table and column."""
        next_engine = open_engine(store_url)
        try:
            while not stop.is_set():
                with next_engine.begin() as conn:
                    n = len(written)
                    conn.execute(
                        text("INSERT INTO next_notes (id, note) VALUES (:i, 'n')"), {"i": n}
                    )
                    conn.execute(text("UPDATE agents SET next_note = :n"), {"n": f"note {n}"})
                written.append(n)
                stop.wait(0.01)
        finally:
            next_engine.dispose()

    writer = threading.Thread(target=the_next_release)
    try:
        install_tiny(store, tmp_path)
        register_triage(store)
        store.mandates.grant(mandate())
        writer.start()
        with running_gateway(store, tmp_path / "home") as gw:
            answered = 0
            for _ in range(20):
                call = gw.call(
                    "POST",
                    "/v1/agents/acme/ticket-triage/invoke",
                    "caller:finance-bot",
                    json={"capability": "ticket.classify", "input": _ticket()},
                )
                assert call.status_code == 200, call.text
                answered += 1
            # An agent registered by this holon (no next_note) and an eval it runs.
            register_triage(store, "acme/second")
            done = gw.evaluate("acme/ticket-triage")
            assert done["status"] == "done"
        assert store.ledger.drain(timeout=30)
        with store.engine.connect() as conn:
            rows = conn.execute(
                text("SELECT count(*) FROM ledger WHERE caller = 'finance-bot'")
            ).scalar_one()
        assert rows == answered
    finally:
        stop.set()
        if writer.is_alive():
            writer.join(timeout=30)
        store.close()
    assert len(written) > 0  # the next release wrote while this one served

    # The release after declares it serves only its own code: this holon no longer starts.
    _upgrade_to(store_url, next_release, "9002", monkeypatch)
    with pytest.raises(SchemaMismatch, match="serves holon from revision 9002") as refused:
        open_store(store_url, secret_key=new_key())
    assert refused.value.details["serves_from"] == "9002"
    doctor = {f["check"]: f for f in cli("doctor", "--json").json()["findings"]}
    assert doctor["store"]["level"] == "fail"


def test_a_store_behind_this_holon_is_still_refused(store_url: str) -> None:
    """Rolling goes one way: new code needs `holon db upgrade` first."""
    engine = open_engine(store_url)
    upgrade(engine, str(_script().get_revision(SCHEMA_REVISION).down_revision))
    engine.dispose()
    with pytest.raises(SchemaMismatch, match="run `holon db upgrade`|needs revision"):
        open_store(store_url, secret_key=new_key())
