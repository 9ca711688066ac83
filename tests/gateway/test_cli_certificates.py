"""`holon records certificate`, `holon certificates verify|revocations`, `holon keys …` on the
store, and the ledger naming the certificate a call relied on."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

from records import Certify, Store, utcnow
from schema import validator
from schema.canonical import canonical_digest
from tests._servers import serve
from tests.gateway._cli import CLI, FINANCE_MANDATE, TRIAGE, add_triage

AGENT = "acme/ticket-triage"


@pytest.fixture
def world(cli: CLI, tmp_path: Path) -> CLI:
    add_triage(cli, tmp_path, 4)
    assert cli("eval", AGENT, "--yes").code == 0
    return cli


def _files(cli: CLI, tmp_path: Path) -> tuple[Path, Path, Path]:
    cert, jwks, revs = tmp_path / "cert.json", tmp_path / "jwks.json", tmp_path / "revs.json"
    res = cli("records", "certificate", AGENT, "-o", str(cert))
    assert res.code == 0, res.stderr
    jwks.write_text(cli("keys", "jwks").stdout)
    revs.write_text(cli("certificates", "revocations").stdout)
    return cert, jwks, revs


def _verify(cli: CLI, cert: Path, *extra: str) -> tuple[int, Any]:
    res = cli("certificates", "verify", str(cert), *extra, "--json")
    return res.code, res.json()


def test_a_record_certificate_verifies_offline(world: CLI, tmp_path: Path) -> None:
    cert, jwks, revs = _files(world, tmp_path)
    offline = CLI(tmp_path / "elsewhere")  # another home: no store of the issuer
    code, verdict = _verify(
        offline, cert, "--jwks", str(jwks), "--revocations", str(revs), "--manifest", str(TRIAGE)
    )
    assert code == 0, verdict
    assert verdict["valid"] is True and verdict["agent"] == AGENT
    assert verdict["checked"] == {
        "signature": True,
        "expiry": True,
        "revocation": True,
        "subject": True,
    }
    record = world("records", "show", AGENT, "--json").json()
    assert verdict["certificate_id"] == record["certificate_id"]
    assert verdict["eval_id"] == record["eval_id"]
    # Verifying touched no store: the other home has none.
    assert not (tmp_path / "elsewhere").exists()


def test_the_certificate_follows_its_schemas_and_tells_authors_nothing_more(
    world: CLI, tmp_path: Path
) -> None:
    cert, _, revs = _files(world, tmp_path)
    envelope = json.loads(cert.read_text())
    validator("certificate").validate(envelope)
    listed = json.loads(revs.read_text())
    validator("certificate").validate(listed)
    validator("revocations").validate(json.loads(base64.b64decode(listed["payload"])))
    payload = base64.b64decode(envelope["payload"])
    statement = json.loads(payload)
    validator("certificate-statement").validate(statement)
    # Nothing of the holdout beyond what an author may read (docs/integrity.md).
    text = payload.decode()
    for secret in ("holdout_epoch", "epoch", "plan_digest", "Refund please", "stability"):
        assert secret not in text
    holdout = statement["predicate"]["suites"]["tiny"]["holdout"]
    assert set(holdout) == {"passed", "total", "rate", "ci95"}
    assert statement["predicate"]["suites"]["tiny"]["suite_digest"].startswith("hmac-sha256:")


def test_verify_without_a_key_set_uses_the_stores(world: CLI, tmp_path: Path) -> None:
    cert, _, _ = _files(world, tmp_path)
    code, verdict = _verify(world, cert)
    assert code == 0 and verdict["checked"]["revocation"] is True
    plain = world("certificates", "verify", str(cert))
    assert plain.code == 0 and "verifies" in plain.stdout
    assert "subject not checked" in plain.stderr


def test_a_tampered_certificate_is_refused_with_its_reason(world: CLI, tmp_path: Path) -> None:
    cert, jwks, _ = _files(world, tmp_path)
    envelope = json.loads(cert.read_text())
    payload = base64.b64decode(envelope["payload"]).replace(b'"eval_score":1', b'"eval_score":2')
    envelope["payload"] = base64.b64encode(payload).decode()
    tampered = tmp_path / "tampered.json"
    tampered.write_text(json.dumps(envelope))
    code, body = _verify(world, tampered, "--jwks", str(jwks))
    assert code == 1
    assert body["error"]["code"] == "certificate_rejected"
    assert body["error"]["details"]["reason"] == "signature"


def test_another_manifest_presented_is_refused(world: CLI, tmp_path: Path) -> None:
    cert, jwks, _ = _files(world, tmp_path)
    other = tmp_path / "other.yaml"
    other.write_text(TRIAGE.read_text().replace("version: 1.1.0", "version: 1.1.1"))
    code, body = _verify(world, cert, "--jwks", str(jwks), "--manifest", str(other))
    assert code == 1
    assert body["error"]["details"] == {"reason": "subject_mismatch", "field": "version"}


def test_bad_files_name_the_file(world: CLI, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    res = world("certificates", "verify", str(bad), "--json")
    assert res.code == 2 and "bad.json" in res.json()["error"]["message"]
    res = world("certificates", "verify", str(tmp_path / "missing.json"), "--json")
    assert res.code == 2 and "missing.json" in res.json()["error"]["message"]


def test_rotation_and_a_new_registration(world: CLI, tmp_path: Path) -> None:
    cert, _, _ = _files(world, tmp_path)
    before = world("keys", "list", "--json").json()
    rotated = world("keys", "rotate", "--json").json()
    assert rotated["retired"] == [before["items"][0]["kid"]]
    listed = world("keys", "list", "--json").json()
    assert [k["active"] for k in listed["items"]] == [True, False]
    assert listed["issuer"] == before["issuer"]
    # The old key still verifies what it signed, from a fresh key set file.
    jwks = tmp_path / "jwks2.json"
    jwks.write_text(world("keys", "jwks").stdout)
    code, verdict = _verify(world, cert, "--jwks", str(jwks))
    assert code == 0 and verdict["kid"] == before["items"][0]["kid"]
    # A new version registered revokes the certificate of the old one.
    newer = tmp_path / "newer.yaml"
    newer.write_text(TRIAGE.read_text().replace("version: 1.1.0", "version: 1.2.0"))
    assert world("agents", "register", str(newer)).code == 0
    code, body = _verify(world, cert)
    assert code == 1 and body["error"]["details"]["reason"] == "revoked"
    assert "registered version 1.2.0" in body["error"]["details"]["revoked_reason"]
    res = world("records", "certificate", AGENT, "--json")
    assert res.code == 2 and res.json()["error"]["code"] == "not_found"
    listed = json.loads(world("certificates", "revocations").stdout)
    validator("revocations").validate(json.loads(base64.b64decode(listed["payload"])))


MANDATE = FINANCE_MANDATE + "min_eval_score: 0.5\n"


def test_the_ledger_names_the_certificate_relied_on(world: CLI, tmp_path: Path) -> None:
    (tmp_path / "mandate.yaml").write_text(MANDATE)
    assert world("mandates", "grant", str(tmp_path / "mandate.yaml")).code == 0
    ticket = '{"subject": "Refund please", "body": "I was charged twice."}'
    res = world(
        "invoke",
        AGENT,
        "--capability",
        "ticket.classify",
        "--caller",
        "finance-bot",
        "--input",
        ticket,
    )
    assert res.code == 0, res.stderr
    record = world("records", "show", AGENT, "--json").json()
    (row,) = world("ledger", "--json").json()["items"]
    assert row["decision"] == "allow"
    assert row["certificate_id"] == record["certificate_id"] is not None


def test_an_a2a_agents_card_is_checked_by_url(sqlite_store: Store, tmp_path: Path) -> None:
    cards = {"served": {"name": "Triage", "version": "1.0.0", "skills": [{"id": "echo"}]}}
    app = Starlette(routes=[Route("/card", lambda _: JSONResponse(cards["served"]))])
    manifest = {
        "schema_version": 1,
        "id": "acme/a2a",
        "version": "1.0.0",
        "protocol": "a2a",
        "endpoint": "https://agents.example/a2a",
        "capabilities": ["echo"],
    }
    sqlite_store.agents.register(manifest)
    with sqlite_store.write() as session:
        sqlite_store.certificates.issue_in(
            session,
            Certify(manifest, canonical_digest(cards["served"]), {"eval_id": "ev_a2a"}),
            now=utcnow(),
        )
    cert, jwks = tmp_path / "cert.json", tmp_path / "jwks.json"
    issued = sqlite_store.certificates.of_eval("ev_a2a")
    assert issued is not None
    cert.write_text(json.dumps(issued.envelope))
    jwks.write_text(json.dumps(sqlite_store.keys.jwks()))
    offline = CLI(tmp_path / "elsewhere")
    with serve(app) as url:
        code, verdict = _verify(offline, cert, "--jwks", str(jwks), "--agent-card", url + "/card")
        assert code == 0 and verdict["checked"]["subject"] is True
        cards["served"] = {**cards["served"], "url": "https://evil.example/rpc"}
        code, body = _verify(offline, cert, "--jwks", str(jwks), "--agent-card", url + "/card")
    assert code == 1
    assert body["error"]["details"] == {"reason": "subject_mismatch", "field": "agent_card_sha256"}
