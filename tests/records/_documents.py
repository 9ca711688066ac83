"""Documents the records tests hand to a store: an agent's manifest, a suite's install."""

from __future__ import annotations

from typing import Any

from records import SuiteInstall

# An A2A agent's manifest, as little of it as a registration needs.
MANIFEST: dict[str, Any] = {
    "schema_version": 1,
    "id": "acme/triage",
    "version": "1.0.0",
    "protocol": "a2a",
    "endpoint": "https://agents.example/triage",
    "capabilities": ["ticket.classify"],
}


def suite_install(version: int = 1, digest: str = "a" * 64, suite_id: str = "tiny") -> SuiteInstall:
    """A two-public, three-holdout ticket.classify suite, `digest` its only digest."""
    return SuiteInstall(
        id=suite_id,
        version=version,
        capability="ticket.classify",
        title="Tiny",
        suite_digest=digest,
        digests={"suite_digest": digest},
        files={"suite.yaml": "id: tiny\n"},
        public_cases=2,
        holdout_cases=3,
        holdout_kind="file",
    )
