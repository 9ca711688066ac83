"""Keys and certificates in the store (records._keys, records._certificate_registry), on both
backends: keys encrypted at rest, rotation keeping old keys, revocation when the agent
changes (a new registration, a probe that finds another agent or card)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from records import (
    Certify,
    Store,
    new_key,
    open_store,
    utcnow,
    verify_certificate,
    verify_revocations,
)
from records._models import SigningKeyRow
from schema.canonical import canonical_digest
from schema.errors import CertificateRejected, EnvironmentFault, NotFound

MANIFEST: dict[str, Any] = {
    "schema_version": 1,
    "id": "acme/triage",
    "version": "1.0.0",
    "protocol": "a2a",
    "endpoint": "https://agents.example/triage",
    "capabilities": ["ticket.classify"],
}
CARD = canonical_digest({"name": "Triage", "version": "1.0.0"})


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url, secret_key=new_key(), auto_upgrade=True)
    try:
        yield opened
    finally:
        opened.close()


def _issue(store: Store, manifest: dict[str, Any] = MANIFEST, card: str | None = CARD) -> str:
    with store.write() as session:
        return store.certificates.issue_in(
            session,
            Certify(manifest, card, {"eval_id": "ev_test", "eval_score": 0.9}),
            now=utcnow(),
        )


def _envelope(store: Store, cert_id: str) -> dict[str, Any]:
    row = store.certificates.of_eval("ev_test")
    assert row is not None and row.id == cert_id
    return dict(row.envelope)


def test_the_key_is_made_once_and_encrypted_at_rest(store: Store, store_url: str) -> None:
    jwks = store.keys.jwks()
    assert len(jwks["keys"]) == 1 and jwks == store.keys.jwks()
    (entry,) = jwks["keys"]
    assert (entry["kty"], entry["crv"], entry["alg"], entry["use"]) == (
        "OKP",
        "Ed25519",
        "EdDSA",
        "sig",
    )
    assert "d" not in entry
    with store.read() as session:
        row = session.scalars(select(SigningKeyRow)).one()
    # Fernet ciphertext: the raw key is not in the database.
    assert bytes(row.private_key).startswith(b"gAAAA")
    # Opened with another secret key, the store cannot sign.
    other = open_store(store_url, secret_key=new_key())
    try:
        with pytest.raises(EnvironmentFault, match="cannot be decrypted"):
            other.certificates.revocations()
    finally:
        other.close()


def test_rotation_keeps_old_certificates_verifiable(store: Store) -> None:
    store.agents.register(MANIFEST)
    cert_id = _issue(store)
    envelope = _envelope(store, cert_id)
    first = store.keys.list()[0]["kid"]
    rotated = store.keys.rotate()
    assert rotated["retired"] == [first] and rotated["kid"] != first
    keys = store.keys.list()
    assert [k["active"] for k in keys] == [True, False] and keys[1]["kid"] == first
    verified = verify_certificate(
        envelope, store.keys.jwks(), now=utcnow(), revocations=store.certificates.revocations()
    )
    assert verified.kid == first and verified.certificate_id == cert_id
    # What is signed from now on is signed by the new key.
    revocations = store.certificates.revocations()
    assert revocations["signatures"][0]["keyid"] == rotated["kid"]


def test_a_new_registration_revokes_the_agents_certificates(store: Store) -> None:
    store.agents.register(MANIFEST)
    cert_id = _issue(store)
    envelope = _envelope(store, cert_id)
    store.agents.register({**MANIFEST, "version": "1.0.1"})
    revoked = verify_revocations(
        store.certificates.revocations(), store.keys.jwks(), issuer=store.keys.issuer()
    )
    assert "registered version 1.0.1" in revoked[cert_id]["reason"]
    with pytest.raises(CertificateRejected) as caught:
        verify_certificate(
            envelope, store.keys.jwks(), now=utcnow(), revocations=store.certificates.revocations()
        )
    assert caught.value.details["reason"] == "revoked"


def test_an_identity_mismatch_revokes_and_a_changed_card_is_one(store: Store) -> None:
    store.agents.register(MANIFEST)
    cert_id = _issue(store)
    # The certified card again: nothing changes.
    found = store.identities.observe(
        "acme/triage",
        "1.0.0",
        answered_id="Triage",
        answered_version="1.0.0",
        not_advertised=(),
        mismatch=None,
        card_digest=CARD,
    )
    assert found.mismatch_at is None and found.card_digest == CARD
    assert cert_id not in _revoked(store)
    # Another card at the same version: a mismatch, which revokes and stales.
    other = canonical_digest({"name": "Triage", "version": "1.0.0", "url": "https://evil"})
    found = store.identities.observe(
        "acme/triage",
        "1.0.0",
        answered_id="Triage",
        answered_version="1.0.0",
        not_advertised=(),
        mismatch=None,
        card_digest=other,
    )
    assert found.mismatch_reason is not None and "another agent card" in found.mismatch_reason
    assert found.stale_reason(utcnow() - timedelta(minutes=1)) is not None
    assert "another agent card" in _revoked(store)[cert_id]["reason"]


def test_a_probe_that_finds_another_version_revokes(store: Store) -> None:
    store.agents.register({**MANIFEST, "protocol": "holon-http"})
    cert_id = _issue(store, {**MANIFEST, "protocol": "holon-http"}, None)
    store.identities.observe(
        "acme/triage",
        "1.0.0",
        answered_id="acme/triage",
        answered_version="2.0.0",
        not_advertised=(),
        mismatch="answered as version '2.0.0', but 1.0.0 is registered",
    )
    assert "2.0.0" in _revoked(store)[cert_id]["reason"]


def _revoked(store: Store) -> dict[str, dict[str, Any]]:
    return verify_revocations(
        store.certificates.revocations(), store.keys.jwks(), issuer=store.keys.issuer()
    )


def test_an_agent_without_a_record_has_no_certificate(store: Store) -> None:
    store.agents.register(MANIFEST)
    with pytest.raises(NotFound, match="no certificate"):
        store.certificates.current("acme/triage", "1.0.0")
