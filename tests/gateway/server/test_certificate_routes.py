"""The certificate routes over real HTTP: who may call them, and what they answer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from records import new_key, open_store, verify_revocations
from tests.gateway.server._gateway import Gateway, register_triage, running_gateway


@pytest.fixture
def gateway(tmp_path: Path) -> Iterator[Gateway]:
    store = open_store(
        f"sqlite:///{tmp_path / 'holon.db'}", secret_key=new_key(), auto_upgrade=True
    )
    register_triage(store)
    with running_gateway(store, tmp_path / "home", eval_workers=0) as gw:
        yield gw
    store.close()


def test_the_key_set_and_revocation_list_need_no_token(gateway: Gateway) -> None:
    jwks = gateway.call("GET", "/.well-known/jwks.json")
    assert jwks.status_code == 200
    body = jwks.json()
    assert body["issuer"].startswith("urn:holon:issuer:") and len(body["keys"]) == 1
    revocations = gateway.call("GET", "/.well-known/holon/revocations.json")
    assert revocations.status_code == 200
    assert verify_revocations(revocations.json(), body, issuer=body["issuer"]) == {}


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/v1/keys"),
        ("POST", "/v1/keys/rotate"),
        ("POST", "/v1/certificates/import"),
        ("GET", "/v1/certificates"),
        ("GET", "/v1/certificates/issuers"),
        ("POST", "/v1/certificates/issuers"),
        ("POST", "/v1/certificates/recheck"),
    ],
)
def test_keys_and_imports_are_the_operators(gateway: Gateway, method: str, path: str) -> None:
    for role in ("org:acme", "caller:finance-bot"):
        answer = gateway.call(method, path, role, json={})
        assert answer.status_code == 403, (role, answer.text)
    assert gateway.call(method, path).status_code == 401


def test_rotation_over_the_api(gateway: Gateway) -> None:
    before = gateway.call("GET", "/v1/keys", "operator").json()
    rotated = gateway.call("POST", "/v1/keys/rotate", "operator").json()
    assert rotated["retired"] == [before["items"][0]["kid"]]
    assert len(gateway.call("GET", "/.well-known/jwks.json").json()["keys"]) == 2


def test_an_agent_without_a_record_has_no_certificate(gateway: Gateway) -> None:
    answer = gateway.call("GET", "/v1/records/acme/ticket-triage/certificate", "caller:finance-bot")
    assert answer.status_code == 404 and answer.json()["error"]["code"] == "not_found"


def test_a_bad_import_is_refused_with_its_reason(gateway: Gateway) -> None:
    jwks = gateway.call("GET", "/.well-known/jwks.json").json()
    envelope = {"payloadType": "application/vnd.in-toto+json", "payload": "e30=", "signatures": []}
    answer = gateway.call(
        "POST", "/v1/certificates/import", "operator", json={"certificate": envelope, "jwks": jwks}
    )
    assert answer.status_code == 422
    assert answer.json()["error"]["details"]["reason"] == "unsigned"
    unknown = gateway.call(
        "POST", "/v1/certificates/import", "operator", json={"certificate": envelope, "x": 1}
    )
    assert unknown.status_code == 400 and unknown.json()["error"]["details"]["path"] == "$.x"
