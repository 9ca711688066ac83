"""A host that vanishes in the middle of a transaction (its link cut, then its processes
SIGKILLed: nothing reaches PostgreSQL, not even a reset) does not hold its row locks for
the kernel's two hours: holon's connections have the server probe them (records._pg_probes,
SERVER_KEEPALIVES), so the server drops a dead host's connection and its transaction
rolls back within about half a minute. A connection without those settings, cut the
same way at the same moment, still holds its lock then: the control. Needs what the
multi-host test needs (tests/hosts/test_hosts.py)."""

from __future__ import annotations

import functools
import os
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from records._pg_probes import KEEPALIVE_INTERVAL_S, UNACKNOWLEDGED_MS
from tests.hosts import run
from tests.hosts._netns import Network, wait_for
from tests.hosts._services import ROOT, Postgres

pytestmark = [pytest.mark.slow]

# Run on the client host: lock one row of `held` in a transaction and keep it open.
HOLDER = """
import sys, time
from sqlalchemy import create_engine, text
from records import open_engine
url, how, row = sys.argv[1:]
engine = open_engine(url) if how == "holon" else create_engine(url)
with engine.connect() as conn:
    conn.execute(text("SELECT id FROM held WHERE id = :id FOR UPDATE"), {"id": int(row)})
    print("locked", flush=True)
    time.sleep(3600)
"""


def _says(log: Path, what: str) -> bool:
    return what in log.read_text()


def _free(url: str, row: int) -> bool:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("SELECT id FROM held WHERE id = :id FOR UPDATE NOWAIT"), {"id": row})
        return True
    except OperationalError:  # could not obtain lock
        return False
    finally:
        engine.dispose()


@pytest.mark.timeout(300)
def test_a_host_gone_mid_transaction_releases_its_locks(tmp_path: Path) -> None:
    why = run.missing()
    if why is not None:
        if os.environ.get("HOLON_REQUIRE_HOSTS") == "1":
            pytest.fail(f"{why} (HOLON_REQUIRE_HOSTS=1: the multi-host tests must run)")
        pytest.skip(why)
    net = Network(tmp_path)
    postgres = None
    try:
        postgres = Postgres(net, net.add("pg", 10))
        client = net.add("app", 20)
        setup = create_engine(postgres.url)
        with setup.begin() as conn:
            conn.execute(text("CREATE TABLE held (id integer PRIMARY KEY)"))
            conn.execute(text("INSERT INTO held VALUES (1), (2)"))
        setup.dispose()
        for how, row in (("holon", 1), ("plain", 2)):
            net.spawn(
                client,
                [sys.executable, "-c", HOLDER, postgres.url, how, str(row)],
                env=dict(os.environ),
                what=how,
                cwd=ROOT,
            )
        for how in ("holon", "plain"):
            log = client.log(how)
            wait_for(functools.partial(_says, log, "locked"), f"the {how} lock", 60)
        assert not _free(postgres.url, 1) and not _free(postgres.url, 2)
        net.kill(client)
        cut = time.monotonic()
        bound = UNACKNOWLEDGED_MS / 1000
        wait_for(lambda: _free(postgres.url, 1), "holon's lock to be released", bound + 30)
        took = time.monotonic() - cut
        # Nothing the server sent or probed is acknowledged after the cut: the connection
        # is dropped once that lasted UNACKNOWLEDGED_MS, give or take a probe.
        assert took <= bound + KEEPALIVE_INTERVAL_S, took
        assert not _free(postgres.url, 2), "the control: a plain connection's lock stays"
        print(f"\nholon's lock released {took:.1f} s after its host vanished; the plain one held")
    finally:
        net.close()
        if postgres is not None:
            postgres.close()
