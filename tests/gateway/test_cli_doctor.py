"""`holon doctor`: a deployment checked from one host, each problem with its fix."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

import records._health
from evals import make_plan, start
from records import new_key, open_store, utcnow
from tests.gateway._cli import CLI, add_triage


def _findings(cli: CLI) -> tuple[int, dict[str, dict[str, Any]]]:
    res = cli("doctor", "--json")
    body = res.json()
    assert body["ok"] is (res.code == 0)
    return res.code, {f["check"]: f for f in body["findings"]}


def test_a_used_embedded_store_is_healthy(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    code, found = _findings(cli)
    assert code == 0 and found["store"]["level"] == "warn"  # empty: made on first use
    assert found["secret key"]["level"] == "skipped"
    assert not (tmp_path / "holon.db").exists()  # it changes nothing, not even a file
    assert cli("agents", "list").code == 0
    code, found = _findings(cli)
    assert code == 0
    assert {f["level"] for f in found.values()} == {"ok"}, found
    plain = cli("doctor")
    assert plain.code == 0 and "ok   store: sqlite:///" in plain.stdout


def test_an_unreachable_store_fails_and_skips_the_rest(tmp_path: Path) -> None:
    cli = CLI(tmp_path, HOLON_DATABASE_URL="postgresql+psycopg://x@127.0.0.1:1/none")
    code, found = _findings(cli)
    assert code == 3 and found["store"]["level"] == "fail"
    assert [found[c]["level"] for c in ("secret key", "clock", "workers")] == ["skipped"] * 3
    plain = cli("doctor")
    assert plain.code == 3 and "FAIL store:" in plain.stdout and "Traceback" not in plain.stderr


@pytest.mark.postgres
def test_a_shared_store_says_what_is_wrong_and_the_fix(tmp_path: Path, postgres_url: str) -> None:
    cli = CLI(tmp_path, HOLON_DATABASE_URL=postgres_url, HOLON_AGENT_NETWORKS="any")
    code, found = _findings(cli)
    assert code == 3 and found["store"]["level"] == "fail"
    assert "holon db upgrade" in found["store"]["fix"]
    assert cli("db", "upgrade").code == 0
    code, found = _findings(cli)
    assert code == 3
    assert found["secret key"]["level"] == "fail"
    assert "HOLON_SECRET_KEY is not set" in found["secret key"]["detail"]
    assert "Fernet.generate_key()" in found["secret key"]["fix"]
    assert found["network policy"]["level"] == "warn"
    assert found["public URL"]["level"] == "warn"
    assert found["clock"]["level"] == "ok" and "from the database's" in found["clock"]["detail"]
    keyed = CLI(
        tmp_path,
        HOLON_DATABASE_URL=postgres_url,
        HOLON_SECRET_KEY=new_key().decode(),
        HOLON_PUBLIC_URL="https://holon.example",
    )
    code, found = _findings(keyed)
    assert code == 0 and {f["level"] for f in found.values()} == {"ok"}, found


@pytest.mark.postgres
def test_a_host_whose_clock_is_off_fails(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    cli = CLI(tmp_path, HOLON_DATABASE_URL=postgres_url, HOLON_SECRET_KEY=new_key().decode())
    assert cli("db", "upgrade").code == 0
    monkeypatch.setattr(records._health, "utcnow", lambda: utcnow() + timedelta(seconds=30))
    code, found = _findings(cli)
    assert code == 3 and found["clock"]["level"] == "fail"
    # The skew is measured across a round trip to the database: 30 s give or take its time.
    skew = re.search(r"([+-][0-9.]+) s from the database", found["clock"]["detail"])
    assert skew is not None and abs(float(skew.group(1)) - 30) < 1, found["clock"]["detail"]
    assert "NTP" in found["clock"]["fix"]
    monkeypatch.setattr(records._health, "utcnow", lambda: utcnow() - timedelta(seconds=3))
    code, found = _findings(cli)
    assert code == 0 and found["clock"]["level"] == "warn"


def test_a_running_eval_without_a_worker_is_named(tmp_path: Path) -> None:
    cli = CLI(tmp_path)
    add_triage(cli, tmp_path)
    key = (tmp_path / "secret.key").read_text().strip()
    store = open_store(f"sqlite:///{tmp_path / 'holon.db'}", secret_key=key)
    try:
        plan = make_plan(store, "acme/ticket-triage", home=tmp_path)
        fresh = start(store, plan)
        _, found = _findings(cli)
        assert found["workers"]["level"] == "ok"  # just started: a worker may come
        with store.write() as session:
            session.execute(
                text("UPDATE evals SET created_at = :at WHERE id = :id"),
                {"at": utcnow() - timedelta(minutes=5), "id": fresh.id},
            )
    finally:
        store.close()
    code, found = _findings(cli)
    assert code == 0 and found["workers"]["level"] == "warn"
    assert fresh.id in found["workers"]["detail"] and "holon worker" in found["workers"]["fix"]
