"""The certificate format (records._certificates): every kind of tampering refused with its reason.

Pure: keys made here, no store. The verifier is the one `holon certificates
verify` runs, so what is refused here is refused offline too.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from records import (
    CARD_DIGEST_FIELD,
    PAYLOAD_TYPE,
    REJECT_REASONS,
    agent_identity,
    jwk_of,
    pae,
    sign_envelope,
    verify_certificate,
)
from records._certificates import key_id, signed_revocations, statement
from schema.canonical import canonical_digest, digest
from schema.errors import CertificateRejected
from schema.jsontext import dumps
from tests.records._documents import MANIFEST as A2A_MANIFEST

ISSUER = "urn:holon:issuer:test"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MANIFEST: dict[str, Any] = {
    **A2A_MANIFEST,
    "limits": {"max_cost_usd": "0.01", "timeout_s": 5},
    "pricing": {"per_call_usd": "0.001"},
    "contact": "ops@example.com",
}
CARD = {"name": "Triage", "version": "1.0.0", "skills": [{"id": "ticket.classify"}]}


class Issuer:
    def __init__(self) -> None:
        self.key = Ed25519PrivateKey.generate()
        self.kid = key_id(self.key.public_key())
        self.others: list[Ed25519PrivateKey] = []

    def jwks(self, *extra: dict[str, Any]) -> dict[str, Any]:
        keys = [jwk_of(self.key.public_key()), *(jwk_of(k.public_key()) for k in self.others)]
        return {"issuer": ISSUER, "keys": [*keys, *extra]}

    def certificate(self, **predicate: Any) -> dict[str, Any]:
        body = {
            "certificate_id": "crt_01M8S16TF620DHWN2EDYBJWQDT",
            "issuer": ISSUER,
            "issued_at": "2026-12-01T11:00:00Z",
            "expires_at": "2026-12-31T11:00:00Z",
            "eval_id": "ev_01M8S16STSGC9WY4V4JWNPDVWR",
            "eval_score": 0.9,
            **predicate,
        }
        identity = agent_identity(MANIFEST, canonical_digest(CARD))
        signed = statement(subject_name="acme/triage@1.0.0", identity=identity, predicate=body)
        return sign_envelope(dumps(signed).encode(), PAYLOAD_TYPE, self.key, self.kid)

    def revocations(self, *ids: str, issuer: str = ISSUER) -> dict[str, Any]:
        revoked = [
            {"certificate_id": i, "revoked_at": "2026-12-01T11:30:00Z", "reason": "r"} for i in ids
        ]
        return signed_revocations(issuer, "2026-12-01T11:30:00Z", revoked, self.key, self.kid)


@pytest.fixture
def issuer() -> Issuer:
    return Issuer()


def _reason(envelope: Any, jwks: Any, **kw: Any) -> str:
    with pytest.raises(CertificateRejected) as caught:
        verify_certificate(envelope, jwks, now=kw.pop("now", NOW), **kw)
    reason = str(caught.value.details["reason"])
    assert reason in REJECT_REASONS
    assert caught.value.exit_code == 1 and caught.value.code == "certificate_rejected"
    return reason


def _with_payload(envelope: dict[str, Any], payload: bytes) -> dict[str, Any]:
    return {**envelope, "payload": base64.b64encode(payload).decode()}


def _with_sig(envelope: dict[str, Any], sig: bytes, kid: str | None = None) -> dict[str, Any]:
    keyid = kid or envelope["signatures"][0]["keyid"]
    return {**envelope, "signatures": [{"keyid": keyid, "sig": base64.b64encode(sig).decode()}]}


def test_a_certificate_verifies_with_every_check(issuer: Issuer) -> None:
    envelope = issuer.certificate()
    presented = agent_identity(MANIFEST, canonical_digest(CARD))
    verified = verify_certificate(
        envelope, issuer.jwks(), now=NOW, revocations=issuer.revocations(), presented=presented
    )
    assert verified.issuer == ISSUER and verified.kid == issuer.kid
    assert verified.certificate_id == "crt_01M8S16TF620DHWN2EDYBJWQDT"
    # The subject is sha256 over the RFC 8785 text of the identity: the library's and
    # holon's own JCS writer agree, and contact (no certification) is not in it.
    assert verified.subject_digest == digest(presented) == canonical_digest(presented)
    assert "contact" not in verified.identity
    # The signature is Ed25519 over DSSE's PAE, as a third party checks it.
    payload = base64.b64decode(envelope["payload"])
    issuer.key.public_key().verify(
        base64.b64decode(envelope["signatures"][0]["sig"]), pae(PAYLOAD_TYPE, payload)
    )


def test_pae_is_the_dsse_v1_layout() -> None:
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_changed_byte_of_the_payload_is_refused(data: st.DataObject) -> None:
    issuer = Issuer()
    envelope = issuer.certificate()
    payload = bytearray(base64.b64decode(envelope["payload"]))
    index = data.draw(st.integers(0, len(payload) - 1))
    payload[index] ^= data.draw(st.integers(1, 255))
    assert _reason(_with_payload(envelope, bytes(payload)), issuer.jwks()) == "signature"


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_changed_byte_of_the_signature_is_refused(data: st.DataObject) -> None:
    issuer = Issuer()
    envelope = issuer.certificate()
    sig = bytearray(base64.b64decode(envelope["signatures"][0]["sig"]))
    index = data.draw(st.integers(0, len(sig) - 1))
    sig[index] ^= data.draw(st.integers(1, 255))
    assert _reason(_with_sig(envelope, bytes(sig)), issuer.jwks()) == "signature"


def test_a_payload_type_changed_is_refused(issuer: Issuer) -> None:
    envelope = {**issuer.certificate(), "payloadType": "application/json"}
    assert _reason(envelope, issuer.jwks()) == "malformed"


def test_a_swapped_kid_is_refused(issuer: Issuer) -> None:
    other = Ed25519PrivateKey.generate()
    issuer.others.append(other)
    envelope = issuer.certificate()
    sig = base64.b64decode(envelope["signatures"][0]["sig"])
    # The signature names the issuer's other key: that key does not verify it.
    assert _reason(_with_sig(envelope, sig, key_id(other.public_key())), issuer.jwks()) == (
        "signature"
    )


def test_an_unknown_key_is_refused(issuer: Issuer) -> None:
    stranger = Issuer()
    assert _reason(issuer.certificate(), stranger.jwks()) == "unknown_key"
    # Signed by a stranger's key under the issuer's kid: the issuer's key refuses it.
    forged = sign_envelope(
        base64.b64decode(issuer.certificate()["payload"]), PAYLOAD_TYPE, stranger.key, issuer.kid
    )
    assert _reason(forged, issuer.jwks()) == "signature"


def test_a_key_set_entry_holding_another_key_under_the_kid_is_refused(issuer: Issuer) -> None:
    stranger = Issuer()
    forged_entry = {**jwk_of(stranger.key.public_key()), "kid": issuer.kid}
    forged = sign_envelope(
        base64.b64decode(issuer.certificate()["payload"]), PAYLOAD_TYPE, stranger.key, issuer.kid
    )
    assert _reason(forged, {"issuer": ISSUER, "keys": [forged_entry]}) == "kid_mismatch"


def test_expired_and_not_yet_valid_are_refused(issuer: Issuer) -> None:
    envelope = issuer.certificate()
    assert _reason(envelope, issuer.jwks(), now=datetime(2026, 12, 31, 11, 0, tzinfo=UTC)) == (
        "expired"
    )
    assert _reason(envelope, issuer.jwks(), now=NOW - timedelta(hours=2)) == "not_yet_valid"


def test_a_revoked_certificate_is_refused(issuer: Issuer) -> None:
    envelope = issuer.certificate()
    revoked = issuer.revocations("crt_01M8S16TF620DHWN2EDYBJWQDT")
    with pytest.raises(CertificateRejected) as caught:
        verify_certificate(envelope, issuer.jwks(), now=NOW, revocations=revoked)
    assert caught.value.details["reason"] == "revoked"
    assert caught.value.details["revoked_at"] == "2026-12-01T11:30:00Z"
    # A revocation list is checked like a certificate: altered, another issuer's, or a
    # certificate passed off as one, it fails the check (closed, never "not revoked").
    payload = base64.b64decode(revoked["payload"]).replace(b"crt_01M8", b"crt_01M9")
    assert _reason(envelope, issuer.jwks(), revocations=_with_payload(revoked, payload)) == (
        "signature"
    )
    other = issuer.revocations(issuer="urn:holon:issuer:other")
    assert _reason(envelope, issuer.jwks(), revocations=other) == "issuer_mismatch"
    assert _reason(envelope, issuer.jwks(), revocations=envelope) == "malformed"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"endpoint": "https://evil.example/triage"}, "endpoint"),
        ({"version": "1.0.1"}, "version"),
        ({"capabilities": ["ticket.classify", "invoice.extract"]}, "capabilities"),
        ({"limits": {"max_cost_usd": "0.02", "timeout_s": 5}}, "limits"),
    ],
)
def test_another_agent_presented_is_refused(
    issuer: Issuer, change: dict[str, Any], field: str
) -> None:
    presented = agent_identity({**MANIFEST, **change})
    with pytest.raises(CertificateRejected) as caught:
        verify_certificate(issuer.certificate(), issuer.jwks(), now=NOW, presented=presented)
    assert caught.value.details == {"reason": "subject_mismatch", "field": field}


def test_another_card_presented_is_refused(issuer: Issuer) -> None:
    card = {**CARD, "url": "https://evil.example/a2a"}
    presented = {CARD_DIGEST_FIELD: canonical_digest(card)}
    with pytest.raises(CertificateRejected) as caught:
        verify_certificate(issuer.certificate(), issuer.jwks(), now=NOW, presented=presented)
    assert caught.value.details["field"] == CARD_DIGEST_FIELD
    # The same card with its keys in another order and numbers spelt otherwise is the same.
    same = json.loads(
        '{"skills": [{"id": "ticket.classify"}], "version": "1.0.0", "name": "Triage"}'
    )
    ok = {CARD_DIGEST_FIELD: canonical_digest(same)}
    verify_certificate(issuer.certificate(), issuer.jwks(), now=NOW, presented=ok)


def test_an_envelope_without_signatures_is_refused(issuer: Issuer) -> None:
    envelope = {**issuer.certificate(), "signatures": []}
    assert _reason(envelope, issuer.jwks()) == "unsigned"


def test_an_hmac_keyed_with_the_public_key_is_refused(issuer: Issuer) -> None:
    """HS256 with the public key as its secret: the classic JWT confusion. No HMAC is
    ever computed here; the bytes are an Ed25519 signature that does not verify."""
    envelope = issuer.certificate()
    public = issuer.key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    payload = base64.b64decode(envelope["payload"])
    for secret in (public, jwk_of(issuer.key.public_key())["x"].encode()):
        mac = hmac.new(secret, pae(PAYLOAD_TYPE, payload), hashlib.sha256).digest()
        assert _reason(_with_sig(envelope, mac), issuer.jwks()) == "signature"


@pytest.mark.parametrize(
    "entry",
    [
        {"kty": "oct", "k": "c2VjcmV0"},
        {"kty": "OKP", "crv": "Ed25519", "alg": "none"},
        {"kty": "OKP", "crv": "Ed25519", "alg": "HS256"},
        {"kty": "OKP", "crv": "X25519"},
        {"kty": "OKP", "crv": "Ed25519", "use": "enc"},
        {"kty": "EC", "crv": "P-256"},
    ],
)
def test_a_key_set_entry_of_another_algorithm_is_refused(
    issuer: Issuer, entry: dict[str, Any]
) -> None:
    real = jwk_of(issuer.key.public_key())
    confused = {**real, **entry, "kid": issuer.kid}
    assert _reason(issuer.certificate(), {"issuer": ISSUER, "keys": [confused]}) == "key_type"


def test_a_private_key_in_the_key_set_is_refused(issuer: Issuer) -> None:
    entry = {**jwk_of(issuer.key.public_key()), "d": "AAAA"}
    assert _reason(issuer.certificate(), {"issuer": ISSUER, "keys": [entry]}) == "key_type"


def test_a_key_set_of_another_issuer_is_refused(issuer: Issuer) -> None:
    jwks = {**issuer.jwks(), "issuer": "urn:holon:issuer:other"}
    assert _reason(issuer.certificate(), jwks) == "issuer_mismatch"


def test_a_signed_statement_whose_identity_is_not_its_subject_is_refused(issuer: Issuer) -> None:
    envelope = issuer.certificate()
    value = json.loads(base64.b64decode(envelope["payload"]))
    value["predicate"]["identity"]["endpoint"] = "https://evil.example/triage"
    resigned = sign_envelope(dumps(value).encode(), PAYLOAD_TYPE, issuer.key, issuer.kid)
    assert _reason(resigned, issuer.jwks()) == "malformed"


@pytest.mark.parametrize(
    "envelope",
    [
        None,
        [],
        {"payloadType": PAYLOAD_TYPE},
        {"payloadType": PAYLOAD_TYPE, "payload": "!!!", "signatures": []},
        {"payloadType": PAYLOAD_TYPE, "payload": "e30=", "signatures": "x"},
        {"payloadType": PAYLOAD_TYPE, "payload": "e30=", "signatures": [{"sig": "AA=="}]},
    ],
)
def test_what_is_not_an_envelope_is_malformed(issuer: Issuer, envelope: Any) -> None:
    assert _reason(envelope, issuer.jwks()) == "malformed"


def test_a_signed_payload_that_is_not_a_certificate_is_malformed(issuer: Issuer) -> None:
    for payload in (
        b"not json",
        b"[]",
        b'{"_type": "x"}',
        dumps(
            {
                "_type": "https://in-toto.io/Statement/v1",
                "predicateType": "https://slsa.dev/provenance/v1",
            }
        ).encode(),
    ):
        envelope = sign_envelope(payload, PAYLOAD_TYPE, issuer.key, issuer.kid)
        assert _reason(envelope, issuer.jwks()) == "malformed"


def test_a_key_set_that_is_not_one_is_malformed(issuer: Issuer) -> None:
    assert _reason(issuer.certificate(), {"keys": "x"}) == "malformed"
    assert _reason(issuer.certificate(), []) == "malformed"
