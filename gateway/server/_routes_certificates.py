"""Routes of certificates (docs/certificates.md): the agent's certificate, this store's
public keys and revocation list (both without a token, as verifiers fetch them), the
operator's key rotation and certificate import."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from gateway.operations import KEYS_LIST, KEYS_ROTATE
from gateway.server._auth import Bearer
from gateway.server._http import body_object, json_response, read_json
from gateway.server._operations import endpoint
from gateway.server._service import Endpoint, Service
from records import CERTIFICATE_MAX_BYTES, JWKS_MAX_BYTES, REVOCATIONS_MAX_BYTES
from schema.errors import UsageError

OPERATOR = frozenset({"operator"})
IMPORT_FIELDS = ("certificate", "jwks", "revocations")

ENVELOPE: dict[str, Any] = {"$ref": "certificate.schema.json"}
JWKS: dict[str, Any] = {
    "type": "object",
    "required": ["keys"],
    "properties": {
        "issuer": {"type": "string", "description": "the issuer these keys sign for"},
        "keys": {"type": "array", "items": {"type": "object"}},
    },
}
IMPORT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["certificate", "jwks"],
    "additionalProperties": False,
    "properties": {
        "certificate": {
            "type": "object",
            "description": "the certificate: a DSSE envelope (certificate.schema.json)",
        },
        "jwks": JWKS,
        "revocations": {"type": "object", "description": "the issuer's signed revocation list"},
    },
}


async def get_certificate(request: Request, who: Bearer, svc: Service) -> Response:
    agent_id = f"{request.path_params['org']}/{request.path_params['name']}"
    return json_response(await svc.run(svc.client.certificates.certificate, agent_id))


async def jwks(request: Request, who: Any, svc: Service) -> Response:
    return json_response(await svc.run(svc.client.certificates.jwks))


async def revocations(request: Request, who: Any, svc: Service) -> Response:
    return json_response(await svc.run(svc.client.certificates.revocations))


async def import_certificate(request: Request, who: Bearer, svc: Service) -> Response:
    limit = CERTIFICATE_MAX_BYTES + JWKS_MAX_BYTES + REVOCATIONS_MAX_BYTES
    body = body_object(await read_json(request, limit), "the body")
    unknown = sorted(set(body) - set(IMPORT_FIELDS))
    if unknown or "certificate" not in body or "jwks" not in body:
        path = f"$.{unknown[0][:40]}" if unknown else "$"
        raise UsageError(
            f"{path}: an import is {{certificate, jwks[, revocations]}}",
            details={"path": path, "fields": list(IMPORT_FIELDS)},
        )
    view = await svc.run(
        svc.client.certificates.import_certificate,
        body["certificate"],
        body["jwks"],
        body.get("revocations"),
    )
    return json_response(view, 201)


ENDPOINTS = [
    Endpoint(
        "GET",
        "/v1/records/{org}/{name}/certificate",
        "any",
        get_certificate,
        "the signed certificate of the agent's current record (a DSSE envelope)",
        response=ENVELOPE,
        statuses=(404, 409),
    ),
    Endpoint(
        "GET",
        "/.well-known/jwks.json",
        "none",
        jwks,
        "this store's public signing keys (retired ones too), as OKP/Ed25519 JWKs",
        response=JWKS,
    ),
    Endpoint(
        "GET",
        "/.well-known/holon/revocations.json",
        "none",
        revocations,
        "this store's signed revocation list (a DSSE envelope)",
        response=ENVELOPE,
    ),
    endpoint(KEYS_LIST),
    endpoint(KEYS_ROTATE),
    Endpoint(
        "POST",
        "/v1/certificates/import",
        OPERATOR,
        import_certificate,
        "verify another issuer's certificate and keep it as an imported record",
        request=IMPORT_SCHEMA,
        statuses=(404, 409, 413, 422),
    ),
]
