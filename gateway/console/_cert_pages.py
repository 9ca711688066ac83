"""Console pages over certificates (docs/certificates.md): this gateway's and imported
ones, one certificate with its signature verified, and a form that verifies a pasted one.

Each reads what the API of the same data gives its role: the list is the operator's
(`certificates.list`); a certificate's page is the operator's, or anyone's for the
certificate the API hands any token (`certificates.show`: the current record's); the
key set and the revocation list are public documents. Verifying is the code `holon
certificates verify` runs (`certificate_verdict`), and keeps nothing.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from gateway.console._web import Web
from gateway.operations import (
    CERTIFICATES_LIST,
    CERTIFICATES_REVOCATIONS,
    CERTIFICATES_SHOW,
    KEYS_JWKS,
    AgentRef,
    Nothing,
    certificate_verdict,
)
from gateway.web import parse_body
from records import CERTIFICATE_MAX_BYTES, JWKS_MAX_BYTES, REVOCATIONS_MAX_BYTES
from schema.errors import CertificateRejected, HolonError, NotFound, UsageError

__all__ = [
    "JWKS_PATH",
    "REVOCATIONS_PATH",
    "certificate_page",
    "certificates_page",
    "verify_form",
    "verify_pasted",
]

# Where the gateway publishes its public documents (the operations' own paths).
JWKS_PATH = KEYS_JWKS.path
REVOCATIONS_PATH = CERTIFICATES_REVOCATIONS.path
# The pasted documents, each bounded as `holon certificates verify` bounds its files;
# the form itself is bounded by the console's form limit first.
PASTED = (
    ("certificate", "the certificate", CERTIFICATE_MAX_BYTES),
    ("jwks", "the issuer's key set", JWKS_MAX_BYTES),
    ("revocations", "the issuer's revocation list", REVOCATIONS_MAX_BYTES),
)


def _documents() -> dict[str, str]:
    return {"jwks": JWKS_PATH, "revocations": REVOCATIONS_PATH}


async def certificates_page(web: Web) -> Response:
    service = web.shared.service

    def load() -> dict[str, Any]:
        return {
            "certificates": service.call(CERTIFICATES_LIST, Nothing())["items"],
            "issuer": service.call(KEYS_JWKS, Nothing()).get("issuer"),
        }

    return web.page("certificates.html", documents=_documents(), **await web.shared.run(load))


def _rejection(exc: CertificateRejected) -> dict[str, Any]:
    body = exc.to_body()["error"]
    return {"reason": (body.get("details") or {}).get("reason"), "message": body["message"]}


def _check(envelope: Any, jwks: Any, revocations: Any) -> dict[str, Any]:
    """The verdict on a certificate, or why it does not verify (a result, not an error)."""
    try:
        return certificate_verdict(envelope, jwks, revocations)
    except CertificateRejected as exc:
        return {"valid": False, **_rejection(exc)}


def _kid(envelope: Any) -> str:
    signatures = envelope.get("signatures") if isinstance(envelope, dict) else None
    first = signatures[0] if isinstance(signatures, list) and signatures else {}
    return str(first.get("keyid", "")) if isinstance(first, dict) else ""


def _certificate(web: Web, cert_id: str) -> dict[str, Any]:
    service = web.shared.service
    found = service.store.certificates.find(cert_id)
    envelope = found.pop("envelope")
    if not web.who.is_operator:
        # Anyone but the operator reads only what GET /v1/records/{org}/{name}/certificate
        # hands any token: the agent's current record's certificate, unrevoked; of any
        # other it learns no more than of one that does not exist.
        try:
            current = service.call(CERTIFICATES_SHOW, AgentRef(found["agent"]))
        except HolonError:
            current = None
        if current != envelope:
            raise NotFound(
                f"no certificate {cert_id[:40]!r}", details={"certificate": cert_id[:40]}
            )
    if found["imported"]:
        # Another issuer's: its pinned keys; its revocation list is read by a re-check
        # (`revocation` says whether it ever was), not fetched by a page.
        keys = service.store.issuers.trusted(found["issuer"], _kid(envelope), None)
        verdict = _check(envelope, keys, None)
    else:
        own_keys = service.call(KEYS_JWKS, Nothing())
        verdict = _check(envelope, own_keys, service.call(CERTIFICATES_REVOCATIONS, Nothing()))
    return {"certificate": found, "verdict": verdict, "envelope": envelope}


async def certificate_page(web: Web) -> Response:
    cert_id = web.request.path_params["certificate"]
    data = await web.shared.run(_certificate, web, cert_id)
    return web.page("certificate.html", documents=_documents(), **data)


async def verify_form(web: Web) -> Response:
    return web.page("certificate_verify.html", documents=_documents(), form={}, verdict=None)


def _pasted(web: Web, field: str, what: str, limit: int) -> Any:
    text = web.form.get(field, "").strip()
    if not text:
        return None
    if len(text.encode()) > limit:
        raise UsageError(f"{what} is at most {limit} bytes", details={"field": field})
    try:
        return parse_body(text.encode())
    except UsageError as exc:
        raise UsageError(f"{what}: {exc.message}", details={"field": field}) from None


async def verify_pasted(web: Web) -> Response:
    """Verify a pasted certificate against the key set pasted with it (none: this
    gateway's, with its revocation list); the verdict is shown, nothing is kept."""
    certificate, jwks, revocations = (_pasted(web, *spec) for spec in PASTED)
    if certificate is None:
        raise UsageError(
            "paste a certificate (a DSSE envelope, JSON)", details={"field": "certificate"}
        )
    service = web.shared.service

    def check() -> dict[str, Any]:
        if jwks is None:
            own_revocations = service.call(CERTIFICATES_REVOCATIONS, Nothing())
            return _check(certificate, service.call(KEYS_JWKS, Nothing()), own_revocations)
        return _check(certificate, jwks, revocations)

    verdict = await web.shared.run(check)
    form = {k: web.form.get(k, "") for k, _, _ in PASTED}
    return web.page("certificate_verify.html", documents=_documents(), form=form, verdict=verdict)
