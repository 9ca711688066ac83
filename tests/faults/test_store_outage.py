"""The store goes away mid-eval: a private PostgreSQL cluster stopped and started again.

Never the shared server on 5432: the cluster is this test's own (initdb in a
temporary folder, as .ci/postgres.sh makes one, under the `postgres` user
when running as root). A `holon eval` process runs against it; the cluster
is stopped under it, kept down, and started again. The eval either rides it
out (exit 0 or 1, done) or fails cleanly (exit 3, "cannot reach the store",
no traceback); a resume then completes it to the same exactly-once result
as an uninterrupted run.
"""

from __future__ import annotations

import glob
import json
import os
import pwd
import random
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tests._servers import free_port
from tests.faults._campaign import AGENT, CELLS, TALLY, open_campaign
from tests.faults._campaign import check as check_trial

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


@dataclass
class Cluster:
    """A throw-away PostgreSQL cluster on a free loopback port."""

    bin: Path
    root: Path
    port: int
    as_pg: list[str]

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self) -> str:
        """A fresh database on the cluster: its URL."""
        name = f"holon_faults_{secrets.token_hex(4)}"
        admin = create_engine(self.url(), isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        finally:
            admin.dispose()
        return self.url(name)

    def _ctl(self, *args: str) -> None:
        subprocess.run(
            [*self.as_pg, str(self.bin / "pg_ctl"), "-D", str(self.root / "data"), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=60,
        )

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._ctl("-l", str(self.root / "log"), "-w", "-o", options, "start")

    def stop(self, mode: str = "fast") -> None:
        self._ctl("-m", mode, "-w", "stop")


def _unavailable(reason: str) -> None:
    if os.environ.get("HOLON_REQUIRE_POSTGRES") == "1":
        pytest.fail(reason + " (HOLON_REQUIRE_POSTGRES=1: the PostgreSQL tests must run)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if not found:
        _unavailable("no PostgreSQL server binaries (Debian's postgresql package) to start one")
    as_pg: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="holon-faults-pg-"))
    if os.geteuid() == 0:
        # PostgreSQL refuses to run as root: the cluster belongs to `postgres`.
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root)
            _unavailable("running as root and there is no `postgres` user to run PostgreSQL")
        os.chown(root, user.pw_uid, user.pw_gid)
        as_pg = ["runuser", "-u", "postgres", "--"]
    made = Cluster(Path(found[-1]).parent, root, free_port(), as_pg)
    try:
        subprocess.run(
            [*as_pg, str(made.bin / "initdb"), "-D", str(root / "data"), "-A", "trust"]
            + ["-U", "postgres", "--no-sync"],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )
        made.start()
        yield made
    finally:
        if (root / "data" / "postmaster.pid").exists():
            made.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)


def _version(path: str) -> tuple[int, ...]:
    number = Path(path).parent.parent.name
    return tuple(int(part) for part in number.split(".") if part.isdigit())


@pytest.mark.parametrize("seed", range(2))
def test_postgres_stopped_and_restarted_mid_eval(
    cluster: Cluster, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(f"outage-{seed}")
    stop_after = rng.randint(2, CELLS // 3)  # cells recorded when the store goes away
    down_s = rng.choice([0.5, 2.0])
    campaign = open_campaign(cluster.create_database(), tmp_path)
    try:
        before = campaign.eval_ids()
        proc = campaign.spawn(
            "eval", AGENT, "--yes", "--json", "--concurrency", "2", "--pace", "0.03"
        )
        eval_id = None
        deadline = time.monotonic() + 60
        while proc.poll() is None and time.monotonic() < deadline:
            fresh = campaign.eval_ids() - before
            if fresh:
                eval_id = fresh.pop()
                if campaign.store.evals.counts(eval_id)["done"] >= stop_after:
                    break
            time.sleep(0.02)
        hit = proc.poll() is None
        cluster.stop()
        time.sleep(down_s)  # the eval process meets a store that is not there
        cluster.start()
        out, err = proc.communicate(timeout=90)
        assert "Traceback" not in err, err
        if proc.returncode == -signal.SIGKILL:  # pragma: no cover - never sent here
            pytest.fail("the eval process was killed")
        if proc.returncode == 3:
            # Failed cleanly: one error document naming the store, and how to go on.
            error = json.loads(out)["error"]
            assert error["code"] == "store_unavailable", error
            assert "cannot reach the store" in error["message"], error
            eval_id = eval_id or (campaign.eval_ids() - before).pop()
            assert error["details"]["hint"].endswith(f"holon evals resume {eval_id}"), error
            TALLY["store outage: eval failed cleanly (exit 3)"] += 1
        else:
            assert proc.returncode in (0, 1), (proc.returncode, out, err)
            assert json.loads(out)["eval"]["status"] == "done"
            TALLY["store outage: eval rode it out"] += 1
        if hit:
            TALLY["store outage: PostgreSQL stopped mid-eval"] += 1
        eval_id = eval_id or (campaign.eval_ids() - before).pop()
        done = campaign.done_cells(eval_id)
        if campaign.store.evals.get(eval_id).status != "done":
            res = campaign.cli("evals", "resume", eval_id, "--json")
            assert res.code in (0, 1), res.stderr
        check_trial(campaign, eval_id, done)
    finally:
        campaign.store.close()
