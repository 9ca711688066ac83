"""An eval whose record could not be signed is refused before anything is spent.

On a shared (PostgreSQL) store the secret key must be set on every process: it
decrypts the certificate signing key. Without it, or with another key, `holon
eval` stops at the plan: no agent request (not even the identity probe), no
eval, no holdout budget spent, and the message names the key and its recipe.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from records import new_key
from tests.evals.suites._make import case, make_suite
from tests.gateway._cli import CLI
from tests.gateway._counting import Counting, counting_agent

pytestmark = pytest.mark.postgres
ROOT = Path(__file__).resolve().parents[2]
TRIAGE = (ROOT / "examples" / "agents" / "acme-ticket-triage.yaml").read_text()


@pytest.fixture
def agent() -> Iterator[tuple[Counting, str]]:
    with counting_agent() as served:
        yield served


def _setup(cli: CLI, tmp_path: Path, url: str) -> None:
    assert cli("db", "upgrade").code == 0
    public = [case(f"p{i}", f"Cannot log in {i}", "account") for i in range(3)]
    holdout = [case(f"h{i}", f"Refund please {i}", "billing") for i in range(3)]
    assert cli("suites", "add", str(make_suite(tmp_path, public=public, holdout=holdout))).code == 0
    manifest = tmp_path / "triage.yaml"
    served = TRIAGE.replace("protocol: asgi", "protocol: holon-http", 1)
    manifest.write_text(served.replace("asgi:examples.agents.ticket_triage:app", url, 1))
    res = cli("agents", "register", str(manifest))
    assert res.code == 0, res.stderr


def _nothing_spent(cli: CLI, app: Counting) -> None:
    assert app.calls == 0
    assert cli("evals", "list", "--json").json()["items"] == []
    exposure = cli("suites", "exposure", "tiny", "--json").json()
    assert all(row["evals"] == 0 for row in exposure.get("items", [])), exposure


def test_no_secret_key_refuses_the_eval_before_any_call(
    tmp_path: Path, postgres_url: str, agent: tuple[Counting, str]
) -> None:
    app, url = agent
    cli = CLI(tmp_path, HOLON_DATABASE_URL=postgres_url)
    _setup(cli, tmp_path, url)
    for argv in (("eval", "acme/ticket-triage", "--yes"), ("eval", "acme/ticket-triage")):
        res = cli(*argv, "--json")
        assert res.code == 3, res.stdout
        error = res.json()["error"]
        assert error["code"] == "environment"
        assert "HOLON_SECRET_KEY is not set" in error["message"]
        assert "Fernet.generate_key()" in error["details"]["hint"]
    plain = cli("eval", "acme/ticket-triage", "--yes")
    assert plain.code == 3 and "HOLON_SECRET_KEY" in plain.stderr
    assert "Traceback" not in plain.stderr
    _nothing_spent(cli, app)


def test_another_key_than_the_stores_refuses_the_eval_before_any_call(
    tmp_path: Path, postgres_url: str, agent: tuple[Counting, str]
) -> None:
    app, url = agent
    first = CLI(tmp_path, HOLON_DATABASE_URL=postgres_url, HOLON_SECRET_KEY=new_key().decode())
    _setup(first, tmp_path, url)
    assert first("keys", "rotate").code == 0, "the store's signing key exists"
    other = CLI(tmp_path, HOLON_DATABASE_URL=postgres_url, HOLON_SECRET_KEY=new_key().decode())
    res = other("eval", "acme/ticket-triage", "--yes", "--json")
    assert res.code == 3
    assert "the certificate signing key cannot be decrypted" in res.json()["error"]["message"]
    _nothing_spent(other, app)
    # The key it was made with works: the eval runs and writes its record.
    res = first("eval", "acme/ticket-triage", "--yes", "--json")
    assert res.code in (0, 1), res.stdout
    assert app.calls > 0
