"""What identity probes found, per registered agent version (docs/gateway.md, "Identity").

A probe (the gateway's periodic one, or the one before an eval) asks the
agent who it is; `evals` and `gateway` compare the answer with the manifest
and hand the result here as plain values. One row per (agent, version):

- `not_advertised`: the claimed capabilities the last answer did not list.
  The last answer decides (an agent denying a capability is believed at
  once; one advertising it again is believed again, it only ever narrows
  what it is called for).
- `mismatch_at`: the last time a probe found another id or version. Every
  record of an eval started before it is stale, so a later probe that
  answers right does not clear it: an agent that alternates its answers
  would otherwise be certified again by its next right one. Only an eval
  started after the mismatch (it must pass its own probe first) brings a
  record back, or a new registration (another version has its own row).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.exc import IntegrityError

from records._models import AgentIdentityRow
from records._registry import Registry
from records._rows import from_row
from records._types import utc_text, utcnow

__all__ = ["IdentityInfo", "IdentityRegistry"]

_MAX_TEXT = 120  # the columns' length: an agent's answer is cut to it
_MAX_REASON = 500


@dataclass(frozen=True)
class IdentityInfo:
    agent_id: str
    agent_version: str
    probed_at: datetime
    answered_id: str
    answered_version: str
    not_advertised: tuple[str, ...]
    mismatch_at: datetime | None
    mismatch_reason: str | None
    card_digest: str | None = None

    def stale_reason(self, eval_created_at: datetime) -> str | None:
        """Why a record of an eval started at `eval_created_at` no longer applies, or None."""
        if self.mismatch_at is None or self.mismatch_at < eval_created_at:
            return None
        return (
            f"identity probe at {utc_text(self.mismatch_at)}: {self.mismatch_reason}; "
            "register the version that answers and evaluate it"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "probed_at": utc_text(self.probed_at),
            "answered_id": self.answered_id,
            "answered_version": self.answered_version,
            "not_advertised": list(self.not_advertised),
            "mismatch_at": None if self.mismatch_at is None else utc_text(self.mismatch_at),
            "mismatch_reason": self.mismatch_reason,
        }


class IdentityRegistry(Registry):
    def observe(
        self,
        agent_id: str,
        agent_version: str,
        *,
        answered_id: str,
        answered_version: str,
        not_advertised: Sequence[str],
        mismatch: str | None,
        card_digest: str | None = None,
        now: datetime | None = None,
    ) -> IdentityInfo:
        """Keep what one probe of (agent, registered version) found.

        A mismatch, or an A2A card other than the one a certificate of this version
        certified, revokes the version's certificates (docs/certificates.md) in the
        same transaction, and stales its record."""
        now = now or utcnow()
        for attempt in range(2):
            try:
                return self._observe(
                    agent_id,
                    agent_version,
                    answered_id[:_MAX_TEXT],
                    answered_version[:_MAX_TEXT],
                    sorted(set(not_advertised)),
                    None if mismatch is None else mismatch[:_MAX_REASON],
                    card_digest,
                    now,
                )
            except IntegrityError:
                # Two first probes of one version raced (two gateway processes):
                # the loser updates the winner's row.
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def _observe(
        self,
        agent_id: str,
        agent_version: str,
        answered_id: str,
        answered_version: str,
        not_advertised: list[str],
        mismatch: str | None,
        card_digest: str | None,
        now: datetime,
    ) -> IdentityInfo:
        with self._store.write() as session:
            if mismatch is None and card_digest is not None:
                certified = self._store.certificates.certified_card_in(
                    session, agent_id, agent_version
                )
                if certified is not None and certified != card_digest:
                    mismatch = (
                        f"served another agent card (sha256 {card_digest[:16]}…) than the one "
                        f"certified (sha256 {certified[:16]}…)"
                    )
            row = session.get(AgentIdentityRow, (agent_id, agent_version), with_for_update=True)
            if row is None:
                row = AgentIdentityRow(agent_id=agent_id, agent_version=agent_version)
                session.add(row)
            row.probed_at = now
            row.answered_id = answered_id
            row.answered_version = answered_version
            row.not_advertised = not_advertised
            if card_digest is not None:
                row.card_digest = card_digest
            if mismatch is not None:
                row.mismatch_at = now
                row.mismatch_reason = mismatch
                self._store.certificates.revoke_in(
                    session,
                    agent_id,
                    f"identity probe at {utc_text(now)}: {mismatch}",
                    version=agent_version,
                    now=now,
                )
            session.flush()
            return _info(row)

    def get(self, agent_id: str, agent_version: str) -> IdentityInfo | None:
        """What the last probe of this version found; None when it was never probed."""
        with self._store.read() as session:
            row = session.get(AgentIdentityRow, (agent_id, agent_version))
            return None if row is None else _info(row)


def _info(row: AgentIdentityRow) -> IdentityInfo:
    return from_row(IdentityInfo, row, not_advertised=tuple(str(c) for c in row.not_advertised))
