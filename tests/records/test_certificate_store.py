"""Keys and certificates in the store (records._keys, records._certificate_registry), on both
backends: keys encrypted at rest, rotation keeping old keys, revocation when the agent
changes (a new registration, a probe that finds another agent or card)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
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
from tests.records._documents import MANIFEST

CARD = canonical_digest({"name": "Triage", "version": "1.0.0"})


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
    found = _card_seen(store, CARD)
    assert found.mismatch_at is None and found.card_digest == CARD
    assert cert_id not in _revoked(store)
    # Another card at the same version: a mismatch, which revokes and stales.
    other = canonical_digest({"name": "Triage", "version": "1.0.0", "url": "https://evil"})
    found = _card_seen(store, other)
    assert found.mismatch_reason is not None and "another agent card" in found.mismatch_reason
    assert found.stale_reason(utcnow() - timedelta(minutes=1)) is not None
    assert "another agent card" in _revoked(store)[cert_id]["reason"]


def _card_seen(store: Store, card_digest: str) -> Any:
    """A probe of acme/triage 1.0.0 that found it as registered, its card `card_digest`."""
    return store.identities.observe(
        "acme/triage",
        "1.0.0",
        answered_id="Triage",
        answered_version="1.0.0",
        not_advertised=(),
        mismatch=None,
        card_digest=card_digest,
    )


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


def _foreign(predicate: dict[str, Any], manifest: dict[str, Any] = MANIFEST) -> tuple[Any, Any]:
    """A certificate of another issuer (its own key), with its key set."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from records import PAYLOAD_TYPE, agent_identity, jwk_of, sign_envelope
    from records._certificates import key_id, statement
    from schema.jsontext import dumps

    key = Ed25519PrivateKey.generate()
    now = utcnow()
    body = {
        "certificate_id": "crt_01M8S16TF620DHWN2EDYBJWQDT",
        "issuer": "urn:holon:issuer:other",
        "issued_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "expires_at": (now + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "eval_id": "ev_other",
        "evaluated_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "capabilities": ["ticket.classify"],
        "eval_score": 0.9,
        "overfit": "ok",
        "suites": {},
        **predicate,
    }
    signed = statement(
        subject_name="acme/triage@1.0.0", identity=agent_identity(manifest), predicate=body
    )
    envelope = sign_envelope(dumps(signed).encode(), PAYLOAD_TYPE, key, key_id(key.public_key()))
    return envelope, {"issuer": "urn:holon:issuer:other", "keys": [jwk_of(key.public_key())]}


def _import(store: Store, envelope: Any, jwks: Any) -> dict[str, Any]:
    return store.certificates.import_verified(
        verify_certificate(envelope, jwks, now=utcnow()), envelope, jwks, revocation_checked=True
    )


def test_an_imported_certificate_is_a_record_of_its_issuer(store: Store) -> None:
    manifest = {**MANIFEST, "protocol": "holon-http"}
    store.agents.register(manifest)
    envelope, jwks = _foreign({}, manifest)
    view = _import(store, envelope, jwks)
    assert view["imported"] is True and view["issuer"] == "urn:holon:issuer:other"
    assert _import(store, envelope, jwks) == view  # the same certificate is kept once
    (record,) = store.certificates.imported_records("acme/triage", "1.0.0", manifest, now=utcnow())
    assert record.issuer == "urn:holon:issuer:other" and record.eval_score == Decimal("0.9")
    assert record.certificate_id == view["certificate_id"]
    # A manifest changed here is another agent: the record no longer applies to it.
    changed = {**manifest, "endpoint": "https://elsewhere.example/triage"}
    assert store.certificates.imported_records("acme/triage", "1.0.0", changed, now=utcnow()) == []
    # Expired, it applies no more either.
    later = utcnow() + timedelta(days=2)
    assert store.certificates.imported_records("acme/triage", "1.0.0", manifest, now=later) == []


def test_an_import_must_certify_the_agent_registered_here(store: Store) -> None:
    store.agents.register({**MANIFEST, "protocol": "holon-http"})
    envelope, jwks = _foreign({})  # certifies the a2a manifest: another agent
    with pytest.raises(CertificateRejected) as caught:
        _import(store, envelope, jwks)
    assert caught.value.details == {"reason": "subject_mismatch", "field": "protocol"}
    # An agent this store never registered: nothing to attach the record to.
    envelope, jwks = _foreign({}, {**MANIFEST, "id": "acme/unknown"})
    with pytest.raises(NotFound, match="not registered"):
        _import(store, envelope, jwks)


def test_an_import_whose_numbers_are_not_scores_is_refused(store: Store) -> None:
    store.agents.register(MANIFEST)
    envelope, jwks = _foreign({"eval_score": "high"})
    with pytest.raises(CertificateRejected) as caught:
        _import(store, envelope, jwks)
    assert caught.value.details == {"reason": "malformed", "path": "$.predicate.eval_score"}


def test_an_import_whose_suites_do_not_read_as_a_records_is_refused(store: Store) -> None:
    """The statement's schema leaves a suite's overfit verdict loose; a mandate reads it as a
    record's (records.AgentRecord), so an import whose suite does not read as one is refused
    at its path, and nothing is kept."""
    store.agents.register(MANIFEST)
    suite = {
        "version": 1,
        "capability": "ticket.classify",
        "suite_digest": "hmac-sha256:" + "0" * 64,
        "repetitions": 1,
        "score": 0.9,
        "threshold": 0.7,
        "meets_threshold": True,
        "public": None,
        "holdout": {"passed": 9, "total": 10, "rate": 0.9, "ci95": [0.5958, 0.9821]},
        "overfit": {"verdict": "none"},
    }
    envelope, jwks = _foreign({"suites": {"tiny": suite}})
    with pytest.raises(CertificateRejected) as caught:
        _import(store, envelope, jwks)
    assert caught.value.details == {
        "reason": "malformed",
        "path": "$.predicate.suites.tiny.overfit",
    }
    assert "no 'public'" in caught.value.message
    assert store.certificates.imported_records("acme/triage", "1.0.0", MANIFEST, now=utcnow()) == []
