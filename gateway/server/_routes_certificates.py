"""Routes of certificates (docs/certificates.md): the agent's certificate, this store's
public keys and revocation list (both without a token, as verifiers fetch them), the
operator's key rotation and certificate import. All from the operation table
(gateway/operations/_certificates.py, _tokens.py)."""

from __future__ import annotations

from gateway.operations import (
    CERTIFICATES_IMPORT,
    CERTIFICATES_LIST,
    CERTIFICATES_RECHECK,
    CERTIFICATES_REVOCATIONS,
    CERTIFICATES_SHOW,
    ISSUERS_LIST,
    ISSUERS_PIN,
    KEYS_JWKS,
    KEYS_LIST,
    KEYS_ROTATE,
)
from gateway.web import Endpoint, endpoint

ENDPOINTS: list[Endpoint] = [
    endpoint(CERTIFICATES_SHOW),
    endpoint(KEYS_JWKS),
    endpoint(CERTIFICATES_REVOCATIONS),
    endpoint(KEYS_LIST),
    endpoint(KEYS_ROTATE),
    endpoint(CERTIFICATES_IMPORT),
    endpoint(CERTIFICATES_LIST),
    endpoint(ISSUERS_LIST),
    endpoint(ISSUERS_PIN),
    endpoint(CERTIFICATES_RECHECK),
]
