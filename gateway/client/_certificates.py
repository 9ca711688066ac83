"""Certificates and signing keys on the store (the CLI as operator, and the gateway's routes)."""

from __future__ import annotations

from typing import Any

from records import Store, utcnow, verify_certificate

JSONObject = dict[str, Any]


class CertificateOps:
    def __init__(self, store: Store) -> None:
        self.store = store

    def certificate(self, agent_id: str) -> JSONObject:
        """The signed certificate (DSSE envelope) of the agent's current record."""
        version = self.store.agents.get(agent_id).version
        return self.store.certificates.current(agent_id, version)

    def jwks(self) -> JSONObject:
        return self.store.keys.jwks()

    def revocations(self) -> JSONObject:
        return self.store.certificates.revocations()

    def import_certificate(
        self, certificate: Any, jwks: Any, revocations: Any = None
    ) -> JSONObject:
        """Verify another issuer's certificate against its key set (and revocation list),
        then keep it as an imported record of its agent, labelled with its issuer."""
        verified = verify_certificate(certificate, jwks, now=utcnow(), revocations=revocations)
        return {
            "status": "imported",
            "certificate": self.store.certificates.import_verified(verified, certificate),
        }
