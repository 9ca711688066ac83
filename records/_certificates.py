"""The certificate format (docs/certificates.md): pure, no store, so verifying needs none.

A certificate is an in-toto Statement v1 in a DSSE envelope, signed with
Ed25519 over DSSE's pre-authentication encoding (PAE) of the payload type
and the payload bytes. The subject is the sha256 of the RFC 8785 text of
the agent's canonical identity (its manifest without secrets, and for an A2A
agent the digest of the card it served). The revocation list is an envelope
of its own payload type, so neither can be passed off as the other.

Everything here is bytes in, values or `CertificateRejected` out: the
signature is checked before the payload is parsed, and every rejection
names one reason of `REJECT_REASONS`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import re2
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from joserfc.errors import JoseError
from joserfc.jwk import OKPKey

from schema.canonical import canonical_digest, jcs_value
from schema.errors import CertificateRejected
from schema.jsontext import NumberError, dumps, loads

__all__ = [
    "CARD_DIGEST_FIELD",
    "CERTIFICATE_MAX_BYTES",
    "JWKS_MAX_BYTES",
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "REJECT_REASONS",
    "REVOCATIONS_MAX_BYTES",
    "REVOCATIONS_PAYLOAD_TYPE",
    "REVOCATIONS_TYPE",
    "STATEMENT_TYPE",
    "Verified",
    "agent_identity",
    "canonical_digest",
    "compare_identity",
    "jwk_of",
    "key_id",
    "pae",
    "public_key_of",
    "sign_envelope",
    "statement",
    "verify_certificate",
    "verify_revocations",
]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
PREDICATE_TYPE = "https://holon.dev/attestations/agent-certificate/v1"
REVOCATIONS_PAYLOAD_TYPE = "application/vnd.holon.revocations+json"
REVOCATIONS_TYPE = "https://holon.dev/attestations/revocations/v1"
CARD_DIGEST_FIELD = "agent_card_sha256"

# Bounds on what a verifier reads (a certificate is a few KiB; lists grow with revocations).
CERTIFICATE_MAX_BYTES = 1024 * 1024
JWKS_MAX_BYTES = 256 * 1024
REVOCATIONS_MAX_BYTES = 8 * 1024 * 1024
_MAX_SIGNATURES = 16
MAX_ISSUER_CHARS = 200
_CERTIFICATE_ID = re2.compile("crt_[0-9A-Z]{26}")
# A certificate issued this far in the future of the verifier's clock is refused:
# clocks differ by seconds, not minutes.
CLOCK_SKEW = timedelta(minutes=5)

# Why a certificate is refused: `details.reason` of CertificateRejected.
REJECT_REASONS = (
    "malformed",  # not an envelope, statement or predicate of this format
    "unsigned",  # no signature at all
    "unknown_key",  # no signature by a key of the issuer's key set
    "key_type",  # the key set's entry for the kid is not an Ed25519 signing key
    "kid_mismatch",  # the key set's entry for the kid is another key (its thumbprint differs)
    "signature",  # a signature by a known key that does not verify
    "issuer_mismatch",  # signed by a key set of another issuer
    "not_yet_valid",
    "expired",
    "revoked",
    "subject_mismatch",  # the agent presented is not the one certified
    "unpinned_key",  # on import: signed by a key outside the keys pinned for its issuer
)

# What of a manifest the identity keeps: no contact or description (they certify nothing),
# never a secret (a manifest has none: secrets are set apart and write-only).
_IDENTITY_FIELDS = ("id", "version", "protocol", "endpoint", "capabilities", "limits", "pricing")


def _reject(reason: str, message: str, **details: Any) -> CertificateRejected:
    assert reason in REJECT_REASONS
    return CertificateRejected(message, details={"reason": reason, **details})


# -- canonical identity -------------------------------------------------------------------


def agent_identity(manifest: Mapping[str, Any], card_digest: str | None = None) -> dict[str, Any]:
    """The canonical identity of a registered agent: what its certificate's subject hashes.

    `manifest` is the manifest document as registered (holon's `Manifest.to_json()`);
    `card_digest` the canonical digest of the card an A2A agent served.
    """
    identity: dict[str, Any] = {k: manifest[k] for k in _IDENTITY_FIELDS if k in manifest}
    identity["capabilities"] = sorted(str(c) for c in manifest.get("capabilities", []))
    if card_digest is not None:
        identity[CARD_DIGEST_FIELD] = card_digest
    return jcs_value(identity)  # type: ignore[no-any-return]


def compare_identity(certified: Mapping[str, Any], presented: Mapping[str, Any]) -> None:
    """Raise `subject_mismatch` naming the first field where `presented` differs.

    A field `presented` leaves out is not compared: a manifest alone says nothing
    of a card, a card alone nothing of the manifest.
    """
    for key in sorted(set(certified) | set(presented)):
        if key not in presented:
            continue
        if certified.get(key) != presented[key]:
            raise _reject(
                "subject_mismatch",
                f"the agent presented is not the one certified: its {key} is "
                f"{_shown(presented[key])}, the certificate's is {_shown(certified.get(key))}",
                field=key,
            )


def _shown(value: Any) -> str:
    text = dumps(value)
    return text if len(text) <= 200 else text[:200] + "…"


# -- keys ---------------------------------------------------------------------------------


def jwk_of(public_key: Ed25519PublicKey) -> dict[str, Any]:
    """The public JWK (RFC 8037 OKP) of a key, with its kid, `alg` and `use`."""
    jwk = OKPKey.import_key(public_key)
    return {
        **jwk.as_dict(private=False),
        "kid": jwk.thumbprint(),
        "alg": "EdDSA",
        "use": "sig",
    }


def key_id(public_key: Ed25519PublicKey) -> str:
    """The kid of a key: its RFC 7638 JWK thumbprint (sha256, base64url)."""
    return str(OKPKey.import_key(public_key).thumbprint())


def public_key_of(entry: Any, kid: str) -> Ed25519PublicKey:
    """The Ed25519 key a JWKS entry holds for `kid`, or a rejection saying what is wrong.

    Only an OKP key on Ed25519 for signing is taken: an `oct` (HMAC) key, an
    `alg` other than EdDSA (`none`, `HS256`) or a private member is refused,
    so no entry can make this verify with another algorithm.
    """
    if not isinstance(entry, Mapping):
        raise _reject("key_type", f"the key set's entry for {kid} is not a JSON object", kid=kid)
    kty, crv, alg, use = entry.get("kty"), entry.get("crv"), entry.get("alg"), entry.get("use")
    if kty != "OKP" or crv != "Ed25519" or alg not in (None, "EdDSA") or use not in (None, "sig"):
        raise _reject(
            "key_type",
            f"the key set's entry for {kid} is not an Ed25519 signing key "
            f"(kty {kty!r}, crv {crv!r}, alg {alg!r}); only OKP/Ed25519 (EdDSA) is taken",
            kid=kid,
        )
    if "d" in entry:
        raise _reject("key_type", f"the key set's entry for {kid} holds a private key", kid=kid)
    try:
        jwk = OKPKey.import_key({"kty": "OKP", "crv": "Ed25519", "x": str(entry.get("x"))})
    except (JoseError, ValueError, TypeError):
        raise _reject(
            "key_type", f"the key set's entry for {kid} is not a valid key", kid=kid
        ) from None
    if jwk.thumbprint() != kid:
        raise _reject(
            "kid_mismatch",
            f"the key set's entry for {kid} is another key (its thumbprint is {jwk.thumbprint()})",
            kid=kid,
        )
    key = jwk.public_key
    assert isinstance(key, Ed25519PublicKey)
    return key


def _key_set(jwks: Any) -> tuple[dict[str, Any], str | None]:
    """The entries of a JWKS by kid, and the issuer it names (holon's own member)."""
    keys = jwks.get("keys") if isinstance(jwks, Mapping) else None
    if not isinstance(keys, list):
        raise _reject("malformed", "the key set is not a JWKS (an object with a 'keys' list)")
    by_kid: dict[str, Any] = {}
    for entry in keys:
        if isinstance(entry, Mapping) and isinstance(entry.get("kid"), str):
            by_kid.setdefault(entry["kid"], entry)
    issuer = jwks.get("issuer")
    return by_kid, issuer if isinstance(issuer, str) else None


# -- DSSE ---------------------------------------------------------------------------------


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1's pre-authentication encoding: the bytes a signature covers."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %s %d %s" % (len(kind), kind, len(payload), payload)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise _reject("malformed", f"the envelope's {what} is not a base64 string")
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise _reject("malformed", f"the envelope's {what} is not valid base64") from None


def sign_envelope(
    payload: bytes, payload_type: str, key: Ed25519PrivateKey, kid: str
) -> dict[str, Any]:
    """A DSSE envelope of `payload` with one Ed25519 signature over its PAE."""
    signature = key.sign(pae(payload_type, payload))
    return {
        "payloadType": payload_type,
        "payload": _b64(payload),
        "signatures": [{"keyid": kid, "sig": _b64(signature)}],
    }


def _open_envelope(envelope: Any, payload_type: str, jwks: Any) -> tuple[bytes, str, str | None]:
    """Check the envelope's signature against the key set: (payload, kid, the set's issuer)."""
    if not isinstance(envelope, Mapping):
        raise _reject("malformed", "the certificate is not a DSSE envelope (a JSON object)")
    if envelope.get("payloadType") != payload_type:
        raise _reject(
            "malformed",
            f"the envelope's payloadType is {_shown(envelope.get('payloadType'))}, "
            f"not {payload_type}",
        )
    payload = _unb64(envelope.get("payload"), "payload")
    signatures = envelope.get("signatures")
    if not isinstance(signatures, list):
        raise _reject("malformed", "the envelope has no 'signatures' list")
    if not signatures:
        raise _reject("unsigned", "the envelope carries no signature")
    if len(signatures) > _MAX_SIGNATURES:
        raise _reject("malformed", f"the envelope carries over {_MAX_SIGNATURES} signatures")
    keys, issuer = _key_set(jwks)
    signed = pae(payload_type, payload)
    tried: list[str] = []
    for entry in signatures:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("keyid"), str):
            raise _reject("malformed", "a signature of the envelope has no string 'keyid'")
        kid = entry["keyid"]
        if kid not in keys:
            continue
        key = public_key_of(keys[kid], kid)
        try:
            key.verify(_unb64(entry.get("sig"), "signature"), signed)
        except InvalidSignature:
            tried.append(kid)
            continue
        return payload, kid, issuer
    if tried:
        raise _reject(
            "signature",
            f"the signature by key {tried[0]} does not verify: the certificate was altered "
            "or signed by another key",
            kid=tried[0],
        )
    named = sorted({str(e.get("keyid"))[:80] for e in signatures if isinstance(e, Mapping)})
    raise _reject(
        "unknown_key",
        f"no signature is by a key of the issuer's key set (signed by {', '.join(named)})",
        kids=named,
    )


def _payload_json(payload: bytes) -> dict[str, Any]:
    try:
        value = loads(payload)
    except (ValueError, NumberError, UnicodeDecodeError) as exc:
        raise _reject("malformed", f"the signed payload is not JSON: {str(exc)[:200]}") from None
    if not isinstance(value, dict):
        raise _reject("malformed", "the signed payload is not a JSON object")
    return value


def _time(value: Any, where: str) -> datetime:
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            parsed = None
        if parsed is not None and parsed.tzinfo is not None:
            return parsed
    raise _reject("malformed", f"{where} is not a UTC date-time")


# -- certificates -------------------------------------------------------------------------


def statement(
    *,
    subject_name: str,
    identity: Mapping[str, Any],
    predicate: Mapping[str, Any],
) -> dict[str, Any]:
    """The in-toto Statement of a certificate: `predicate` about the agent `identity`."""
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject_name, "digest": {"sha256": canonical_digest(identity)}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": {**predicate, "identity": dict(identity)},
    }


@dataclass(frozen=True)
class Verified:
    """A certificate that verified: who signed it, and what it says."""

    kid: str
    statement: dict[str, Any]

    @property
    def predicate(self) -> dict[str, Any]:
        predicate: dict[str, Any] = self.statement["predicate"]
        return predicate

    @property
    def certificate_id(self) -> str:
        return str(self.predicate["certificate_id"])

    @property
    def issuer(self) -> str:
        return str(self.predicate["issuer"])

    @property
    def subject_digest(self) -> str:
        return str(self.statement["subject"][0]["digest"]["sha256"])

    @property
    def identity(self) -> dict[str, Any]:
        identity: dict[str, Any] = self.predicate["identity"]
        return identity

    def to_json(self) -> dict[str, Any]:
        predicate = self.predicate
        return {
            "valid": True,
            "certificate_id": self.certificate_id,
            "issuer": self.issuer,
            "kid": self.kid,
            "agent": predicate["identity"].get("id"),
            "agent_version": predicate["identity"].get("version"),
            "subject": self.subject_digest,
            "issued_at": predicate["issued_at"],
            "expires_at": predicate["expires_at"],
            "eval_id": predicate.get("eval_id"),
            "eval_score": predicate.get("eval_score"),
            "capabilities": predicate.get("capabilities"),
        }


def _check_statement(value: dict[str, Any]) -> dict[str, Any]:
    if value.get("_type") != STATEMENT_TYPE:
        raise _reject("malformed", f"the payload is not an in-toto Statement v1 ({STATEMENT_TYPE})")
    if value.get("predicateType") != PREDICATE_TYPE:
        raise _reject(
            "malformed", f"the statement's predicateType is not {PREDICATE_TYPE}: not a certificate"
        )
    subject = value.get("subject")
    if (
        not isinstance(subject, list)
        or len(subject) != 1
        or not isinstance(subject[0], dict)
        or not isinstance(subject[0].get("digest"), dict)
        or not isinstance(subject[0]["digest"].get("sha256"), str)
    ):
        raise _reject("malformed", "the statement needs one subject with a sha256 digest")
    predicate = value.get("predicate")
    if not isinstance(predicate, dict):
        raise _reject("malformed", "the statement has no predicate object")
    for name in ("certificate_id", "issuer", "issued_at", "expires_at"):
        if not isinstance(predicate.get(name), str):
            raise _reject("malformed", f"the predicate lacks a string {name!r}")
    if not _CERTIFICATE_ID.fullmatch(predicate["certificate_id"]):
        raise _reject("malformed", "the predicate's certificate_id is not crt_ and a ULID")
    if not 0 < len(predicate["issuer"]) <= MAX_ISSUER_CHARS:
        raise _reject("malformed", f"the issuer's name is not 1 to {MAX_ISSUER_CHARS} characters")
    identity = predicate.get("identity")
    if not isinstance(identity, dict):
        raise _reject("malformed", "the predicate has no identity object")
    try:
        digest = canonical_digest(identity)
    except ValueError as exc:
        raise _reject(
            "malformed", f"the predicate's identity has no canonical form: {exc}"
        ) from None
    if digest != subject[0]["digest"]["sha256"]:
        # Signed, yet inconsistent: no holon wrote it; refuse it rather than guess which holds.
        raise _reject(
            "malformed", "the predicate's identity does not hash to the statement's subject"
        )
    return value


def verify_certificate(
    envelope: Any,
    jwks: Any,
    *,
    now: datetime,
    revocations: Any = None,
    presented: Mapping[str, Any] | None = None,
) -> Verified:
    """Verify a certificate; the checks in the order docs/certificates.md gives them.

    `jwks`: the issuer's key set. `revocations`: the issuer's signed revocation
    list (None: not checked). `presented`: the identity of the agent presented
    (`agent_identity` of its manifest, or `{CARD_DIGEST_FIELD: ...}` of a card
    alone; None: not checked).
    """
    payload, kid, key_issuer = _open_envelope(envelope, PAYLOAD_TYPE, jwks)
    verified = Verified(kid, _check_statement(_payload_json(payload)))
    predicate = verified.predicate
    if key_issuer is not None and key_issuer != verified.issuer:
        raise _reject(
            "issuer_mismatch",
            f"the certificate names issuer {_shown(verified.issuer)}, the key set is "
            f"{_shown(key_issuer)}'s",
        )
    issued = _time(predicate["issued_at"], "issued_at")
    expires = _time(predicate["expires_at"], "expires_at")
    if issued > now + CLOCK_SKEW:
        raise _reject("not_yet_valid", f"issued at {predicate['issued_at']}, in the future")
    if now >= expires:
        raise _reject(
            "expired",
            f"certificate {verified.certificate_id} expired at {predicate['expires_at']}",
            expires_at=predicate["expires_at"],
        )
    if revocations is not None:
        revoked = verify_revocations(revocations, jwks, issuer=verified.issuer)
        entry = revoked.get(verified.certificate_id)
        if entry is not None:
            raise _reject(
                "revoked",
                f"certificate {verified.certificate_id} was revoked at {entry.get('revoked_at')}: "
                f"{entry.get('reason')}",
                revoked_at=entry.get("revoked_at"),
                revoked_reason=entry.get("reason"),
            )
    if presented is not None:
        compare_identity(verified.identity, presented)
    return verified


# -- revocation lists ---------------------------------------------------------------------


def revocations_payload(issuer: str, issued_at: str, revoked: Iterable[Mapping[str, Any]]) -> bytes:
    """The payload of an issuer's revocation list: every certificate it revoked."""
    return dumps(
        {
            "_type": REVOCATIONS_TYPE,
            "issuer": issuer,
            "issued_at": issued_at,
            "revoked": [dict(r) for r in revoked],
        }
    ).encode("utf-8")


def verify_revocations(envelope: Any, jwks: Any, *, issuer: str) -> dict[str, dict[str, Any]]:
    """The revoked certificates of a signed revocation list, by id; a list that does not
    verify, or is another issuer's, is a rejection (a revocation check that cannot be
    made fails closed)."""
    payload, _, _ = _open_envelope(envelope, REVOCATIONS_PAYLOAD_TYPE, jwks)
    value = _payload_json(payload)
    if value.get("_type") != REVOCATIONS_TYPE or not isinstance(value.get("revoked"), list):
        raise _reject("malformed", f"the revocation list is not a {REVOCATIONS_TYPE} document")
    if value.get("issuer") != issuer:
        raise _reject(
            "issuer_mismatch",
            f"the revocation list is {_shown(value.get('issuer'))}'s, the certificate "
            f"{_shown(issuer)}'s",
        )
    out: dict[str, dict[str, Any]] = {}
    for entry in value["revoked"]:
        if isinstance(entry, dict) and isinstance(entry.get("certificate_id"), str):
            out[entry["certificate_id"]] = entry
    return out


def signed_revocations(
    issuer: str,
    issued_at: str,
    revoked: Sequence[Mapping[str, Any]],
    key: Ed25519PrivateKey,
    kid: str,
) -> dict[str, Any]:
    return sign_envelope(
        revocations_payload(issuer, issued_at, revoked), REVOCATIONS_PAYLOAD_TYPE, key, kid
    )
