"""docs/certificates.md's verification recipe, run as written against a real certificate:
a third party without holon gets the same answers."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature

from records import Certify, Store, agent_identity, utcnow

DOC = (Path(__file__).resolve().parents[2] / "docs" / "certificates.md").read_text()
MANIFEST: dict[str, Any] = {
    "schema_version": 1,
    "id": "acme/triage",
    "version": "1.0.0",
    "protocol": "holon-http",
    "endpoint": "https://agents.example/triage",
    "capabilities": ["ticket.classify", "invoice.extract"],
    "limits": {"max_cost_usd": "0.01", "timeout_s": 5},
    "pricing": {"per_call_usd": "0.001"},
    "contact": "ops@example.com",
}


def _recipe() -> dict[str, Any]:
    (code,) = re.findall(r"### Without holon.*?```python\n(.*?)```", DOC, re.S)
    namespace: dict[str, Any] = {}
    # Our own document, run as a reader would run it.
    exec(compile(code, "docs/certificates.md", "exec"), namespace)
    return namespace


def _issued(store: Store) -> dict[str, Any]:
    store.agents.register(MANIFEST)
    with store.write() as session:
        store.certificates.issue_in(
            session, Certify(MANIFEST, None, {"eval_id": "ev_doc", "eval_score": 0.9}), now=utcnow()
        )
    row = store.certificates.of_eval("ev_doc")
    assert row is not None
    return dict(row.envelope)


def test_the_recipe_verifies_a_certificate(sqlite_store: Store) -> None:
    envelope = _issued(sqlite_store)
    recipe = _recipe()
    jwks, revocations = sqlite_store.keys.jwks(), sqlite_store.certificates.revocations()
    # The identity a third party builds from the manifest, by the doc's words.
    identity = {k: MANIFEST[k] for k in ("id", "version", "protocol", "endpoint", "limits")}
    identity |= {"capabilities": sorted(MANIFEST["capabilities"]), "pricing": MANIFEST["pricing"]}
    assert identity == agent_identity(MANIFEST)
    predicate = recipe["verify"](envelope, jwks, revocations, identity, utcnow())
    assert predicate["eval_score"] == 0.9

    # And it refuses what holon refuses: a changed byte, another agent, a revocation.
    payload = bytearray(base64.b64decode(envelope["payload"]))
    payload[-3] ^= 1
    tampered = {**envelope, "payload": base64.b64encode(bytes(payload)).decode()}
    with pytest.raises(InvalidSignature):
        recipe["verify"](tampered, jwks, revocations, identity, utcnow())
    with pytest.raises(AssertionError):
        recipe["verify"](
            envelope, jwks, revocations, {**identity, "endpoint": "https://evil"}, utcnow()
        )
    sqlite_store.agents.register({**MANIFEST, "version": "1.0.1"})
    with pytest.raises(AssertionError):
        recipe["verify"](
            envelope, jwks, sqlite_store.certificates.revocations(), identity, utcnow()
        )
