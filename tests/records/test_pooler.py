"""A store behind PgBouncer in session mode (docs/deploy.md), a real one: Debian's
1.18 refuses every startup option, so holon's connections there go on without the
server's keepalive probes (records._pg_probes), say so once, and keep the group
commit's times in UTC; a URL's own options are never dropped. Without the pgbouncer
binary the tests skip, unless HOLON_REQUIRE_POOLER=1 (CI) makes them fail."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from records import new_key, open_store
from records._pg_probes import KEEPALIVE_IDLE_S
from schema.errors import StoreUnavailable
from tests._servers import free_port

pytestmark = [pytest.mark.postgres, pytest.mark.anyio]

ROOT = Path(__file__).resolve().parents[2]
_BINARY = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")


@pytest.fixture
def pooled_url(postgres_url: str) -> Iterator[str]:
    """`postgres_url`'s database through a PgBouncer of its own (session pooling)."""
    if _BINARY is None:
        why = "no pgbouncer binary (Debian's package pgbouncer)"
        if os.environ.get("HOLON_REQUIRE_POOLER") == "1":
            pytest.fail(f"{why} (HOLON_REQUIRE_POOLER=1: the pooler tests must run)")
        pytest.skip(why)
    direct = make_url(postgres_url)
    port = free_port()
    # PgBouncer will not run as root: it runs as `nobody` then, so its files are
    # readable by all (they hold no secret: the server trusts local connections here).
    folder = Path(tempfile.mkdtemp(prefix="holon-pgbouncer-"))
    folder.chmod(0o755)
    users = folder / "users.txt"
    users.write_text(f'"{direct.username}" ""\n')
    ini = folder / "pgbouncer.ini"
    ini.write_text(
        "[databases]\n"
        f"* = host={direct.host or '127.0.0.1'} port={direct.port or 5432}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = trust\nauth_file = {users}\npool_mode = session\n"
    )
    for path in (users, ini):
        path.chmod(0o644)
    as_root = ["-u", "nobody"] if os.geteuid() == 0 else []
    log = (folder / "pgbouncer.log").open("wb")
    child = subprocess.Popen([_BINARY, *as_root, str(ini)], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert child.poll() is None, (folder / "pgbouncer.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "pgbouncer did not listen within 30 s"
                time.sleep(0.05)
        yield direct.set(port=port).render_as_string(hide_password=False)
    finally:
        child.terminate()
        child.wait(timeout=30)
        log.close()
        shutil.rmtree(folder, ignore_errors=True)


def _idle_probe(url: str) -> str:
    store = open_store(url, secret_key=new_key())
    try:
        with store.engine.connect() as connection:
            return str(connection.exec_driver_sql("SHOW tcp_keepalives_idle").scalar_one())
    finally:
        store.close()


async def test_a_store_behind_pgbouncer_works_without_the_startup_options(
    pooled_url: str, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    env = {**os.environ, "HOLON_DATABASE_URL": pooled_url}
    upgraded = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "db", "upgrade"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert upgraded.returncode == 0, upgraded.stderr
    assert upgraded.stderr.count("refused startup options") == 1, upgraded.stderr

    caplog.set_level(logging.WARNING, logger="records._pg_probes")
    store = open_store(pooled_url, secret_key=new_key())
    try:
        for _ in range(2):  # a second connection asks no more: it knows
            with store.engine.connect() as connection:
                assert connection.exec_driver_sql("SELECT 1").scalar_one() == 1
            store.engine.dispose()
        ledger = store.ledger.async_ledger()
        grouped = await ledger._connect()
        assert (await (await grouped.execute("SHOW TimeZone")).fetchone()) == ("UTC",)
        ledger.close()
    finally:
        store.close()
    warned = [r for r in caplog.records if r.name == "records._pg_probes"]
    assert len(warned) == 1, warned
    assert "refused startup options" in warned[0].getMessage()
    # Behind the pooler the server's default; direct, holon's probe (the control).
    assert _idle_probe(pooled_url) != str(KEEPALIVE_IDLE_S)
    assert _idle_probe(postgres_url) == str(KEEPALIVE_IDLE_S)


def test_a_urls_own_options_are_never_dropped(
    pooled_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="records._pg_probes")
    with pytest.raises(StoreUnavailable, match="unsupported startup parameter"):
        open_store(f"{pooled_url}?options=-c%20statement_timeout%3D5000", secret_key=new_key())
    assert [r for r in caplog.records if r.name == "records._pg_probes"] == []
