"""Issuing and verifying a certificate, each as a ratio to a bare Ed25519 sign/verify of the
same bytes in the same run (docs/performance.md).

Issuing is what a record's transaction does besides its rows: decrypt the signing key
(Fernet, as it is kept at rest), build the canonical identity and its RFC 8785 digest,
write the statement and sign its PAE. Verifying is `holon certificates verify`'s work
with the key set and the agent presented: key set lookup, thumbprint check of the key,
signature, parse, the identity's digest against the subject, expiry and the subject
comparison (without the revocation list; a second row adds a 100-entry one).
The baselines sign and verify the very PAE bytes of the certificate.

    .venv/bin/python bench/certificates/run.py [--json] [--seconds 1]
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from bench._args import bench_parser
from records import PAYLOAD_TYPE, SecretBox, agent_identity, new_key, pae, verify_certificate
from records._certificates import jwk_of, key_id, sign_envelope, signed_revocations, statement
from schema.jsontext import dumps

ISSUER = "urn:holon:issuer:bench"
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
MANIFEST: dict[str, Any] = {
    "schema_version": 1,
    "id": "acme/ticket-triage",
    "version": "1.1.0",
    "protocol": "holon-http",
    "endpoint": "https://agents.example/triage",
    "capabilities": ["ticket.classify"],
    "limits": {"max_cost_usd": "0.002", "timeout_s": 5},
    "pricing": {"per_call_usd": "0.0002"},
}
SPLIT = {"passed": 57, "total": 60, "rate": 0.95, "ci95": [0.8625, 0.9829]}
PREDICATE: dict[str, Any] = {
    "certificate_id": "crt_01M8S16TF620DHWN2EDYBJWQDT",
    "issuer": ISSUER,
    "issued_at": "2026-12-01T11:00:00Z",
    "expires_at": "2026-12-31T11:00:00Z",
    "eval_id": "ev_01M8S16STSGC9WY4V4JWNPDVWR",
    "evaluated_at": "2026-12-01T11:00:00Z",
    "capabilities": ["ticket.classify"],
    "unverified_capabilities": [],
    "eval_score": 0.95,
    "eval_score_ci95": [0.8625, 0.9829],
    "weakest_suite": "ticket-triage",
    "overfit": "ok",
    "warnings": [],
    "suites": {
        "ticket-triage": {
            "version": 3,
            "capability": "ticket.classify",
            "score": 0.95,
            "threshold": 0.8,
            "meets_threshold": True,
            "public": SPLIT,
            "holdout": SPLIT,
            "overfit": {"verdict": "none", "gap": 0.0, "p_value": 1.0},
            "suite_digest": "hmac-sha256:" + "ab" * 32,
            "repetitions": 3,
        }
    },
    "holdout_evals": {"ticket-triage": 2},
}


def best_rate(work: Callable[[], object], seconds: float) -> float:
    """Operations per CPU second, best of 3 runs of about `seconds` each."""
    rates = []
    for _ in range(3):
        count, started = 0, time.process_time()
        while True:
            for _ in range(50):
                work()
            count += 50
            elapsed = time.process_time() - started
            if elapsed >= seconds:
                break
        rates.append(count / elapsed)
    return max(rates)


def main() -> None:
    parser = bench_parser(__doc__)
    parser.add_argument("--seconds", type=float, default=1.0)
    args = parser.parse_args()

    key = Ed25519PrivateKey.generate()
    kid = key_id(key.public_key())
    box = SecretBox(new_key())
    raw = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    stored = box.encrypt(base64.b64encode(raw).decode())
    jwks = {"issuer": ISSUER, "keys": [jwk_of(key.public_key())]}

    def issue() -> dict[str, Any]:
        signer = Ed25519PrivateKey.from_private_bytes(base64.b64decode(box.decrypt(stored)))
        identity = agent_identity(MANIFEST)
        signed = statement(
            subject_name="acme/ticket-triage@1.1.0", identity=identity, predicate=PREDICATE
        )
        return sign_envelope(dumps(signed).encode(), PAYLOAD_TYPE, signer, kid)

    envelope = issue()
    payload = base64.b64decode(envelope["payload"])
    signed_bytes = pae(PAYLOAD_TYPE, payload)
    signature = base64.b64decode(envelope["signatures"][0]["sig"])
    public = key.public_key()
    presented = agent_identity(MANIFEST)
    revoked = [
        {"certificate_id": f"crt_{i:026d}", "revoked_at": "2026-12-01T10:00:00Z", "reason": "r"}
        for i in range(100)
    ]
    revocations = signed_revocations(ISSUER, "2026-12-01T10:00:00Z", revoked, key, kid)

    def verify() -> object:
        return verify_certificate(envelope, jwks, now=NOW, presented=presented)

    def verify_revoked() -> object:
        return verify_certificate(
            envelope, jwks, now=NOW, presented=presented, revocations=revocations
        )

    rows = []
    sign_rate = best_rate(lambda: key.sign(signed_bytes), args.seconds)
    verify_rate = best_rate(lambda: public.verify(signature, signed_bytes), args.seconds)
    for name, work, baseline in (
        ("issue", issue, sign_rate),
        ("verify", verify, verify_rate),
        ("verify + 100 revocations", verify_revoked, verify_rate),
    ):
        rate = best_rate(work, args.seconds)
        rows.append(
            {
                "operation": name,
                "per_s": round(rate),
                "us": round(1e6 / rate, 1),
                "baseline_per_s": round(baseline),
                "baseline_us": round(1e6 / baseline, 1),
                "ratio": round(rate / baseline, 3),
            }
        )
    result = {"payload_bytes": len(payload), "rows": rows}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"certificate payload: {len(payload)} bytes")
    for row in rows:
        print(
            f"{row['operation']:<26} {row['per_s']:>8,}/s ({row['us']} µs)   bare Ed25519 "
            f"{row['baseline_per_s']:>8,}/s ({row['baseline_us']} µs)   ratio {row['ratio']}"
        )


if __name__ == "__main__":
    main()
