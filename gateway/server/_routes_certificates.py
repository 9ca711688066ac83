"""Routes of certificates (docs/certificates.md): the agent's certificate, this store's
public keys and revocation list (both without a token, as verifiers fetch them), the
operator's key rotation and certificate import. All from the operation table
(gateway/operations/_certificates.py, _tokens.py)."""

from __future__ import annotations

from gateway import operations
from gateway.web import Endpoint, endpoint

ENDPOINTS: list[Endpoint] = [
    endpoint(operations.CERTIFICATES_SHOW),
    endpoint(operations.KEYS_JWKS),
    endpoint(operations.CERTIFICATES_REVOCATIONS),
    endpoint(operations.KEYS_LIST),
    endpoint(operations.KEYS_ROTATE),
    endpoint(operations.CERTIFICATES_IMPORT),
    endpoint(operations.CERTIFICATES_LIST),
    endpoint(operations.ISSUERS_LIST),
    endpoint(operations.ISSUERS_PIN),
    endpoint(operations.CERTIFICATES_RECHECK),
]
