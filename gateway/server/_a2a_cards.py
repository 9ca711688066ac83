"""The A2A front door's agent cards, countersigned by the gateway.

One card per capability the gateway routes (at
`/v1/capabilities/{capability}/.well-known/agent-card.json`) and one per
agent it fronts (`/v1/agents/{org}/{name}/.well-known/agent-card.json`),
so an A2A client given the door's base URL finds the card where A2A looks
for it. The card's one interface is the gateway's JSON-RPC door
(`…/a2a`, A2A 1.0), and its security scheme the caller's bearer token.

The agent's certificate (the DSSE envelope of GET
/v1/records/{org}/{name}/certificate) travels in the card as an A2A
extension, `CERTIFICATE_EXTENSION`, whose params name the issuer, where
its keys are, and each fronted agent's certificate (a capability's card:
every agent claiming it, up to MAX_CERTIFIED; a null certificate with the
reason when there is none). An extension, not a field of our own: A2A
cards are parsed strictly by the SDKs (protobuf), and extensions are the
place the spec gives for what it does not define.

The signature is A2A's AgentCardSignature: a JWS (RFC 7515, EdDSA with the
store's current Ed25519 key) over the RFC 8785 canonical JSON of the card
without its `signatures`, the payload detached: `protected` is the
base64url header (`alg`, `kid`, `typ`, `jku`), `signature` the base64url
signature of `protected + "." + base64url(canonical card)`. Anyone checks it
with the key of `kid` in /.well-known/jwks.json.
"""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import rfc8785

from agents import printable
from gateway.operations import CERTIFICATES_SHOW, AgentRef
from gateway.web import Shared
from records import Signer
from schema import __version__
from schema.errors import HolonError

log = logging.getLogger(__name__)

__all__ = [
    "CERTIFICATE_EXTENSION",
    "agent_card",
    "capability_card",
    "signing_input",
]

CERTIFICATE_EXTENSION = "https://holon.dev/a2a/extensions/certificate/v1"
MAX_CERTIFIED = 20  # certificates on one capability's card
JSON_MODE = "application/json"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def signing_input(card: dict[str, Any], protected: str) -> bytes:
    """What the card's signature signs: the JWS signing input of its canonical form."""
    unsigned = {key: value for key, value in card.items() if key != "signatures"}
    return f"{protected}.{_b64(rfc8785.dumps(unsigned))}".encode("ascii")


def _signed(card: dict[str, Any], signer: Signer, base: str) -> dict[str, Any]:
    header = {"alg": "EdDSA", "kid": signer.kid, "typ": "JOSE", "jku": base + JWKS_PATH}
    protected = _b64(json.dumps(header, separators=(",", ":"), sort_keys=True).encode())
    signature = signer.key.sign(signing_input(card, protected))
    return {**card, "signatures": [{"protected": protected, "signature": _b64(signature)}]}


JWKS_PATH = "/.well-known/jwks.json"


def _skill(shared: Shared, capability: str) -> dict[str, Any]:
    contract = shared.calls.lookups.contract(capability)
    description = f"the capability {capability}"
    modes = [JSON_MODE]
    if contract is not None:
        described = contract.input_schema.get("description")
        if isinstance(described, str):
            description = printable(described, 2000)
        if contract.input_schema.get("type") == "string":
            modes.append("text/plain")
    return {
        "id": capability,
        "name": capability,
        "description": description,
        "tags": [capability.split(".", 1)[0], "holon"],
        "inputModes": modes,
        "outputModes": [JSON_MODE],
    }


def _certificate(shared: Shared, agent_id: str, version: str) -> dict[str, Any]:
    try:
        envelope: Any = shared.service.call(CERTIFICATES_SHOW, AgentRef(agent_id))
        reason = None
    except HolonError as exc:  # no record yet (404), or revoked (409)
        envelope, reason = None, exc.code
    entry: dict[str, Any] = {"agent": agent_id, "agent_version": version, "certificate": envelope}
    if reason is not None:
        entry["reason"] = reason
    return entry


def _card(
    shared: Shared,
    base: str,
    door: str,
    *,
    name: str,
    description: str,
    version: str,
    skills: list[dict[str, Any]],
    certificates: list[dict[str, Any]],
) -> dict[str, Any]:
    def work(session: Any, signer: Signer) -> dict[str, Any]:
        card = {
            "name": name,
            "description": description,
            "version": version,
            "supportedInterfaces": [
                {
                    "url": base + door + "/a2a",
                    "protocolBinding": "JSONRPC",
                    "protocolVersion": "1.0",
                }
            ],
            "provider": {"organization": "holon gateway", "url": base},
            "capabilities": {
                "streaming": True,
                "pushNotifications": False,
                "extensions": [
                    {
                        "uri": CERTIFICATE_EXTENSION,
                        "description": "the certificates (DSSE envelopes, docs/certificates.md) "
                        "of the agents behind this card",
                        "required": False,
                        "params": {
                            "issuer": signer.issuer,
                            "jwks": base + JWKS_PATH,
                            "certificates": certificates,
                        },
                    }
                ],
            },
            "securitySchemes": {
                "bearer": {
                    "httpAuthSecurityScheme": {
                        "scheme": "Bearer",
                        "description": "a holon caller token (caller:<name>)",
                    }
                }
            },
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
            "defaultInputModes": [JSON_MODE],
            "defaultOutputModes": [JSON_MODE],
            "skills": skills,
        }
        return _signed(card, signer, base)

    return shared.store.keys.with_signer(work)


def capability_card(shared: Shared, base: str, capability: str) -> dict[str, Any]:
    """The signed card of the routed door for `capability` (blocking: run it in a thread)."""
    agents = [a for a in shared.calls.lookups.agents_claiming(capability) if not a.disabled]
    return _card(
        shared,
        base,
        f"/v1/capabilities/{capability}",
        name=f"holon {capability}",
        description=f"{capability}, routed by the holon gateway to the best agent the "
        "caller's mandates allow",
        version=__version__,
        skills=[_skill(shared, capability)],
        certificates=[_certificate(shared, a.id, a.version) for a in agents[:MAX_CERTIFIED]],
    )


def agent_card(shared: Shared, base: str, agent_id: str) -> dict[str, Any]:
    """The signed card of the door in front of one agent (blocking: run it in a thread)."""
    agent = shared.calls.lookups.agent(agent_id)
    described = agent.manifest.get("description")
    return _card(
        shared,
        base,
        f"/v1/agents/{agent_id}",
        name=agent_id,
        description=printable(described, 2000)
        if isinstance(described, str)
        else f"{agent_id} through the holon gateway",
        version=agent.version,
        skills=[_skill(shared, capability) for capability in agent.capabilities],
        certificates=[_certificate(shared, agent.id, agent.version)],
    )
