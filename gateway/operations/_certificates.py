"""The operations over certificates (docs/certificates.md), each declared once (see _declare.py).

This store's key set and revocation list are public documents, read without a
token at their well-known paths, as verifiers fetch them (roles "none"); the
CLI prints them as JSON, to keep or hand on. `holon certificates import` and
`holon records certificate` are commands of their own that run these
operations: they read files and URLs, and write one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gateway._roles import OPERATOR
from gateway.operations._checks import flag, given, url
from gateway.operations._declare import (
    Cli,
    Json,
    Operation,
    Schema,
    document,
    param,
    view,
)
from gateway.operations._narrow import by_bearer, doer
from gateway.operations._registry import AgentRef
from gateway.operations._tokens import Nothing
from schema.errors import UsageError
from schema.jsontext import JSONObject

if TYPE_CHECKING:
    from gateway.service import StoreService


ENVELOPE = document("certificate.schema.json")
JWKS: dict[str, Any] = {
    "type": "object",
    "required": ["keys"],
    "properties": {
        "issuer": {"type": "string", "description": "the issuer these keys sign for"},
        "keys": {"type": "array", "items": {"type": "object"}},
    },
}

# records.CERTIFICATE_MAX_BYTES + JWKS_MAX_BYTES + REVOCATIONS_MAX_BYTES, spelled out:
# building the CLI's parser loads no store code. tests/gateway/test_operations.py checks it.
IMPORT_MAX_BYTES = 1024 * 1024 + 256 * 1024 + 8 * 1024 * 1024


# -- certificates.show ---------------------------------------------------------------


def _certificate(service: StoreService, ref: AgentRef) -> JSONObject:
    version = service.store.agents.get(ref.agent).version
    return service.store.certificates.current(ref.agent, version)


CERTIFICATES_SHOW = Operation(
    name="certificates.show",
    method="GET",
    path="/v1/records/{org}/{name}/certificate",
    roles="any",
    request=AgentRef,
    summary="the signed certificate of the agent's current record (a DSSE envelope)",
    run=_certificate,
    response=ENVELOPE,
    statuses=(404, 409),
    cli=None,  # `holon records certificate ORG/AGENT [-o FILE]`
)


# -- verifying: `holon certificates verify` and the console's form --------------------


def certificate_verdict(
    envelope: Any, jwks: Any, revocations: Any = None, presented: Any = None
) -> JSONObject:
    """A certificate verified against a key set (and a revocation list, and the agent
    presented, when given): what it says and which checks ran. Raises
    CertificateRejected with `details.reason` when it does not verify. Pure: no store."""
    from records import utcnow, verify_certificate

    verified = verify_certificate(
        envelope, jwks, now=utcnow(), revocations=revocations, presented=presented
    )
    return {
        **verified.to_json(),
        "checked": {
            "signature": True,
            "expiry": True,
            "revocation": revocations is not None,
            "subject": presented is not None,
        },
    }


# -- certificates.import -------------------------------------------------------------

IMPORT_FIELDS = (
    "certificate",
    "jwks",
    "revocations",
    "revocations_url",
    "allow_unchecked_revocation",
)


def _import_shape(body: JSONObject) -> None:
    unknown = sorted(set(body) - set(IMPORT_FIELDS))
    if unknown or "certificate" not in body or "jwks" not in body:
        path = f"$.{unknown[0][:40]}" if unknown else "$"
        raise UsageError(
            f"{path}: an import is {{certificate, jwks[, revocations, revocations_url, "
            "allow_unchecked_revocation]}",
            details={"path": path, "fields": list(IMPORT_FIELDS)},
        )


@dataclass(frozen=True)
class CertificateImport:
    certificate: Any = given(
        "the certificate: a DSSE envelope (certificate.schema.json)",
        {"type": "object"},
        required=True,
    )
    jwks: Any = given("the issuer's key set", JWKS, required=True)
    revocations: Any = given(
        "the issuer's signed revocation list (required unless allow_unchecked_revocation)",
        {"type": "object"},
    )
    revocations_url: str | None = url(
        "where the issuer publishes its revocation list: kept, for re-checks"
    )
    allow_unchecked_revocation: bool = flag(
        "import without a revocation list: the record is labelled 'revocation "
        "unchecked', and mandates refuse it unless they accept_unchecked_revocation"
    )
    imported_by: str | None = param(
        help="the importing token's id (on the store: cli:LOGIN)", where="bearer", flag=""
    )


def _import(service: StoreService, asked: CertificateImport) -> JSONObject:
    """Verify another issuer's certificate against its key set (and revocation list),
    then keep it as an imported record of its agent, labelled with its issuer.

    The key set given is taken for an issuer only at its first import (it is then
    pinned, records._issuers); a known issuer's certificate and revocation list are
    verified with its pinned keys, whatever key set comes with them."""
    from records import utcnow, verify_certificate

    now = utcnow()
    # Who signed it first (its reason when it does not verify; a key outside its issuer's
    # pinned ones), then what is required.
    signed = verify_certificate(asked.certificate, asked.jwks, now=now)
    keys = service.store.issuers.trusted(signed.issuer, signed.kid, asked.jwks)
    if asked.revocations is None and not asked.allow_unchecked_revocation:
        raise UsageError(
            "no revocation list: an import checks the issuer's (give revocations), or is "
            "allowed without it explicitly (allow_unchecked_revocation), and is then "
            "labelled 'revocation unchecked'",
            details={"path": "$.revocations"},
            hint="holon certificates import CERT --issuer-jwks URL (the list beside it), "
            "--revocations FILE|URL, or --allow-unchecked-revocation",
        )
    verified = verify_certificate(asked.certificate, keys, now=now, revocations=asked.revocations)
    kept = service.store.certificates.import_verified(
        verified,
        asked.certificate,
        keys,
        revocation_checked=asked.revocations is not None,
        revocations_url=asked.revocations_url,
        by=doer(asked.imported_by),
    )
    return {"status": "imported", "certificate": kept}


CERTIFICATES_IMPORT = Operation(
    name="certificates.import",
    method="POST",
    path="/v1/certificates/import",
    roles=OPERATOR,
    request=CertificateImport,
    summary="verify another issuer's certificate and keep it as an imported record",
    run=_import,
    response=view("certificate-import"),
    statuses=(404, 409, 413, 422),
    created=201,
    body_check=_import_shape,
    narrow=by_bearer,
    max_body_bytes=IMPORT_MAX_BYTES,
    cli=None,  # `holon certificates import CERT --issuer-jwks FILE|URL`: it reads them
)


# -- keys.jwks, certificates.revocations: public documents ----------------------------


def _public_document(
    name: str, path: str, summary: str, run: Any, response: Schema, cli_help: str
) -> Operation[Nothing]:
    """One of the store's public documents: read without a token, printed as JSON."""
    return Operation(
        name=name,
        method="GET",
        path=path,
        roles="none",
        request=Nothing,
        summary=summary,
        run=run,
        response=response,
        cli=Cli(help=cli_help, render=Json()),
    )


def _jwks(service: StoreService, _: Nothing) -> JSONObject:
    return service.store.keys.jwks()


KEYS_JWKS = _public_document(
    "keys.jwks",
    "/.well-known/jwks.json",
    "this store's public signing keys (retired ones too), as OKP/Ed25519 JWKs",
    _jwks,
    view("jwks"),
    "the public key set (JWKS), as /.well-known/jwks.json",
)


def _revocations(service: StoreService, _: Nothing) -> JSONObject:
    return service.store.certificates.revocations()


CERTIFICATES_REVOCATIONS = _public_document(
    "certificates.revocations",
    "/.well-known/holon/revocations.json",
    "this store's signed revocation list (a DSSE envelope)",
    _revocations,
    ENVELOPE,
    "this store's signed revocation list",
)
