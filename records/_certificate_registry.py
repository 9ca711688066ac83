"""Certificates in the store: issued with a record, revoked when the agent changes,
imported from other issuers (docs/certificates.md).

The format is `records._certificates` (pure); this module keeps the rows.
A certificate is issued in the transaction that writes its record, so a
record never lacks one; it is revoked in the transaction that changes what
it certified (a new registration, a probe that found another agent or card).
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from records._agent_record import AgentRecord
from records._certificates import (
    CARD_DIGEST_FIELD,
    PAYLOAD_TYPE,
    Verified,
    agent_identity,
    compare_identity,
    sign_envelope,
    signed_revocations,
    statement,
)
from records._ids import ulid
from records._keys import Signer
from records._models import CertificateRow
from records._registry import Registry
from records._types import utc_text, utcnow
from schema.errors import CertificateRejected, NotFound, Refused
from schema.jsontext import dumps

__all__ = [
    "CERTIFICATE_LIFETIME",
    "CertificateRegistry",
    "Certify",
    "ImportedRecord",
    "certificate_id",
    "imported_record",
]

CERTIFICATE_LIFETIME = timedelta(days=30)
_MAX_REASON = 500


@dataclass(frozen=True)
class Certify:
    """What a record's certificate says: the manifest evaluated, the card it served
    (A2A), and what the eval measured as authors may see it."""

    manifest: Mapping[str, Any]
    card_digest: str | None
    predicate: Mapping[str, Any]


def certificate_id() -> str:
    return "crt_" + ulid()


def _summary(row: CertificateRow) -> dict[str, Any]:
    return {
        "certificate_id": row.id,
        "agent": row.agent_id,
        "agent_version": row.agent_version,
        "issuer": row.issuer,
        "imported": row.imported,
        "eval_id": row.eval_id,
        "subject": row.subject_digest,
        "issued_at": utc_text(row.issued_at),
        "expires_at": utc_text(row.expires_at),
        "revoked_at": None if row.revoked_at is None else utc_text(row.revoked_at),
        "revoked_reason": row.revoked_reason,
        # An imported certificate's revocation: "checked" (at import or since, `last_checked`)
        # or "unchecked" (imported without the issuer's list, not re-checked since).
        "revocation": None
        if not row.imported
        else ("checked" if row.revocation_checked else "unchecked"),
        "last_checked": (
            None if row.revocation_checked_at is None else utc_text(row.revocation_checked_at)
        ),
    }


@dataclass(frozen=True)
class ImportedRecord:
    """An imported certificate's record of an agent version, as `holon records show` tells
    it: whose, since when, and whether a mandate may still rely on it."""

    record: AgentRecord  # labelled with its `issuer` and, unchecked, its `revocation`
    certificate_id: str
    imported_at: datetime
    expires_at: datetime
    revoked_at: datetime | None
    revoked_reason: str | None
    revocation_checked: bool
    last_checked: datetime | None

    def status(self, now: datetime) -> str:
        """`active` (a mandate may rely on it), `revoked` (here, or by its issuer's list),
        `expired`."""
        if self.revoked_at is not None:
            return "revoked"
        return "active" if self.expires_at > now else "expired"


class CertificateRegistry(Registry):
    # -- issuing ------------------------------------------------------------------------

    def issue_in(
        self,
        session: Session,
        certify: Certify,
        *,
        now: datetime,
        lifetime: timedelta = CERTIFICATE_LIFETIME,
    ) -> str:
        """Sign and keep the certificate of a record being written in `session`; its id.

        `predicate`: what the eval measured (evals builds it from what authors may
        see); the store adds the certificate's id, the issuer and the times.
        """
        manifest, card_digest, predicate = certify.manifest, certify.card_digest, certify.predicate
        signer = self._store.keys.signer_in(session)
        identity = agent_identity(manifest, card_digest)
        cert_id = certificate_id()
        expires = now + lifetime
        body = {
            **predicate,
            "certificate_id": cert_id,
            "issuer": signer.issuer,
            "issued_at": utc_text(now),
            "expires_at": utc_text(expires),
        }
        agent_id, version = str(manifest["id"]), str(manifest["version"])
        signed = statement(subject_name=f"{agent_id}@{version}", identity=identity, predicate=body)
        envelope = sign_envelope(
            dumps(signed).encode("utf-8"), PAYLOAD_TYPE, signer.key, signer.kid
        )
        session.add(
            CertificateRow(
                id=cert_id,
                agent_id=agent_id,
                agent_version=version,
                issuer=signer.issuer,
                imported=False,
                eval_id=str(predicate["eval_id"]),
                subject_digest=signed["subject"][0]["digest"]["sha256"],
                card_digest=card_digest,
                envelope=envelope,
                record=None,
                issued_at=now.replace(microsecond=0),
                expires_at=expires.replace(microsecond=0),
                created_at=now,
                revoked_at=None,
                revoked_reason=None,
                revocation_checked=True,
                revocation_checked_at=None,
            )
        )
        return cert_id

    # -- revoking -----------------------------------------------------------------------

    def revoke_in(
        self,
        session: Session,
        agent_id: str,
        reason: str,
        *,
        version: str | None = None,
        now: datetime | None = None,
    ) -> builtins.list[str]:
        """Revoke the agent's unrevoked certificates of this store (of `version`, or all)."""
        now = now or utcnow()
        query = select(CertificateRow).where(
            CertificateRow.agent_id == agent_id,
            CertificateRow.imported.is_(False),
            CertificateRow.revoked_at.is_(None),
        )
        if version is not None:
            query = query.where(CertificateRow.agent_version == version)
        revoked = []
        for row in session.scalars(query.with_for_update()):
            row.revoked_at = now
            row.revoked_reason = reason[:_MAX_REASON]
            revoked.append(row.id)
        return revoked

    def revocations(self) -> dict[str, Any]:
        """The signed revocation list of this store: every certificate it revoked."""

        def work(session: Session, signer: Signer) -> dict[str, Any]:
            rows = session.scalars(
                select(CertificateRow)
                .where(CertificateRow.imported.is_(False), CertificateRow.revoked_at.is_not(None))
                .order_by(CertificateRow.revoked_at, CertificateRow.id)
            )
            revoked = [
                {
                    "certificate_id": r.id,
                    "revoked_at": utc_text(r.revoked_at) if r.revoked_at else None,
                    "reason": r.revoked_reason,
                }
                for r in rows
            ]
            return signed_revocations(
                signer.issuer, utc_text(utcnow()), revoked, signer.key, signer.kid
            )

        return self._store.keys.with_signer(work)

    # -- reading ------------------------------------------------------------------------

    def certified_card_in(self, session: Session, agent_id: str, version: str) -> str | None:
        """The card digest the version's newest unrevoked certificate of this store binds."""
        return session.scalars(
            select(CertificateRow.card_digest)
            .where(
                CertificateRow.agent_id == agent_id,
                CertificateRow.agent_version == version,
                CertificateRow.imported.is_(False),
                CertificateRow.revoked_at.is_(None),
            )
            .order_by(CertificateRow.issued_at.desc())
            .limit(1)
        ).first()

    def of_eval(self, eval_id: str) -> CertificateRow | None:
        with self._store.read() as session:
            return session.scalars(
                select(CertificateRow)
                .where(CertificateRow.eval_id == eval_id, CertificateRow.imported.is_(False))
                .order_by(CertificateRow.issued_at.desc())
                .limit(1)
            ).first()

    def current(self, agent_id: str, version: str) -> dict[str, Any]:
        """The envelope of the certificate of the agent version's current record."""
        record = self._store.evals.current_record(agent_id, version)
        row = None if record is None else self.of_eval(record.eval_id)
        if row is None:
            raise NotFound(
                f"{agent_id} {version} has no certificate: it has no record from a full eval "
                "since certificates are issued",
                details={"agent": agent_id, "agent_version": version},
                hint=f"holon eval {agent_id}",
            )
        if row.revoked_at is not None:
            raise Refused(
                f"the certificate of {agent_id} {version} ({row.id}) was revoked at "
                f"{utc_text(row.revoked_at)}: {row.revoked_reason}",
                details=_summary(row),
                hint=f"holon eval {agent_id}",
            )
        return dict(row.envelope)

    def find(self, cert_id: str) -> dict[str, Any]:
        """One certificate, this store's or imported: its summary with its envelope."""
        with self._store.read() as session:
            row = session.get(CertificateRow, cert_id[:32])
            if row is None:
                raise NotFound(
                    f"no certificate {cert_id[:40]!r}", details={"certificate": cert_id[:40]}
                )
            return {**_summary(row), "envelope": dict(row.envelope)}

    def list(self, agent_id: str | None = None) -> builtins.list[dict[str, Any]]:
        with self._store.read() as session:
            query = select(CertificateRow).order_by(CertificateRow.issued_at.desc())
            if agent_id is not None:
                query = query.where(CertificateRow.agent_id == agent_id)
            return [_summary(r) for r in session.scalars(query.limit(1000))]

    # -- importing ----------------------------------------------------------------------

    def import_verified(
        self,
        verified: Verified,
        envelope: Mapping[str, Any],
        jwks: Any,
        *,
        revocation_checked: bool,
        revocations_url: str | None = None,
        by: str | None = None,
    ) -> dict[str, Any]:
        """Keep another issuer's verified certificate as an imported record of its agent.

        The agent must be registered here with the version certified; the record
        is what the certificate carries, labelled with its issuer. `jwks`: the key set
        it verified against, pinned as the issuer's at its first import
        (records._issuers); a known issuer's certificate must be by a pinned key.
        `revocation_checked`: whether the issuer's revocation list was read.
        """
        identity = verified.identity
        agent_id, version = str(identity.get("id")), str(identity.get("version"))
        own = self._store.keys.issuer()
        if verified.issuer == own:
            raise Refused(
                "the certificate is this store's own: nothing to import",
                details={"certificate": verified.certificate_id},
            )
        predicate = verified.predicate
        _check_predicate(verified)
        record = imported_record(verified)
        _check_record(record)
        now = utcnow()

        def once() -> dict[str, Any]:
            with self._store.write() as session:
                self._store.issuers.pin_in(
                    session,
                    verified.issuer,
                    verified.kid,
                    jwks,
                    revocations_url=revocations_url,
                    by=by,
                    now=now,
                )
                existing = session.get(CertificateRow, verified.certificate_id)
                if existing is not None:
                    return _summary(existing)
                registered = self._store.agents.version_in(session, agent_id, version)
                # The certificate must certify the manifest registered here: another
                # endpoint or limits under the same id and version is another agent.
                compare_identity(
                    {k: v for k, v in identity.items() if k != CARD_DIGEST_FIELD},
                    agent_identity(registered.manifest),
                )
                row = CertificateRow(
                    id=verified.certificate_id[:32],
                    agent_id=agent_id,
                    agent_version=version,
                    issuer=verified.issuer[:200],
                    imported=True,
                    eval_id=str(predicate.get("eval_id"))[:32],
                    subject_digest=verified.subject_digest[:64],
                    card_digest=(
                        None
                        if identity.get(CARD_DIGEST_FIELD) is None
                        else str(identity[CARD_DIGEST_FIELD])[:64]
                    ),
                    envelope=dict(envelope),
                    record=record,
                    issued_at=_parse(predicate["issued_at"]),
                    expires_at=_parse(predicate["expires_at"]),
                    created_at=now,
                    revoked_at=None,
                    revoked_reason=None,
                    revocation_checked=revocation_checked,
                    revocation_checked_at=now if revocation_checked else None,
                )
                session.add(row)
                session.flush()
                return _summary(row)

        for attempt in range(2):
            try:
                return once()
            except IntegrityError:
                # Two first imports of one issuer (or one certificate) raced; the loser
                # reads the winner's rows on its second attempt.
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def imported_records(
        self, agent_id: str, version: str, manifest: Mapping[str, Any], *, now: datetime
    ) -> builtins.list[AgentRecord]:
        """The newest imported record of each issuer that still applies to the version, each
        labelled with its `issuer`.

        One applies while its certificate is unexpired and certifies the manifest
        registered here now (its identity, card aside): a changed manifest is
        another agent, whatever another issuer said about the old one.
        """
        out: dict[str, AgentRecord] = {}
        for kept in self.imported_of(agent_id, version, manifest, now=now, applying=True):
            out.setdefault(kept.record.issuer or "", kept.record)
        return builtins.list(out.values())

    def imported_of(
        self,
        agent_id: str,
        version: str,
        manifest: Mapping[str, Any],
        *,
        now: datetime,
        applying: bool = False,
    ) -> builtins.list[ImportedRecord]:
        """Every imported record of the version that certifies the manifest registered here
        now, newest certificate first; with `applying`, only those a mandate may rely on
        (unrevoked, unexpired: `ImportedRecord.status` "active")."""
        here = agent_identity(manifest)
        query = select(CertificateRow).where(
            CertificateRow.agent_id == agent_id,
            CertificateRow.agent_version == version,
            CertificateRow.imported.is_(True),
        )
        if applying:
            query = query.where(
                CertificateRow.revoked_at.is_(None), CertificateRow.expires_at > now
            )
        with self._store.read() as session:
            rows = session.scalars(query.order_by(CertificateRow.issued_at.desc())).all()
        out: builtins.list[ImportedRecord] = []
        for row in rows:
            if row.record is None:
                continue
            certified = {k: v for k, v in row.record["identity"].items() if k != CARD_DIGEST_FIELD}
            if certified != here:
                continue
            record = AgentRecord.from_json(row.record, strict=False)
            out.append(
                ImportedRecord(
                    record=replace(
                        record, revocation=None if row.revocation_checked else "unchecked"
                    ),
                    certificate_id=row.id,
                    imported_at=row.created_at,
                    expires_at=row.expires_at,
                    revoked_at=row.revoked_at,
                    revoked_reason=row.revoked_reason,
                    revocation_checked=row.revocation_checked,
                    last_checked=row.revocation_checked_at,
                )
            )
        return out


def imported_record(verified: Verified) -> dict[str, Any]:
    """What the store keeps of an imported certificate's record: the record (in the shape
    of a local one, as an author may read it) with its certificate's labels (`imported`,
    `expires_at`, `identity`). It reads as an `AgentRecord` labelled with its `issuer`."""
    predicate = verified.predicate
    identity = verified.identity
    keep = (
        "eval_id",
        "evaluated_at",
        "eval_score",
        "eval_score_ci95",
        "weakest_suite",
        "unverified_capabilities",
        "suites",
        "warnings",
        "holdout_evals",
    )
    return {
        "agent": identity.get("id"),
        "agent_version": identity.get("version"),
        **{k: predicate[k] for k in keep if k in predicate},
        "stale": False,
        "stale_reasons": [],
        "issuer": verified.issuer,
        "certificate_id": verified.certificate_id,
        "imported": True,
        "expires_at": predicate["expires_at"],
        "identity": identity,
    }


def _check_predicate(verified: Verified) -> None:
    """An imported certificate becomes a record that mandates read: its statement must be
    of the schema's shape (numbers where scores are, a date-time where times are), or a
    decision would read another issuer's strings as scores."""
    from schema import validator

    error = next(iter(validator("certificate-statement").iter_errors(verified.statement)), None)
    if error is not None:
        path = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.path)
        raise CertificateRejected(
            f"the certificate's statement at {path[:200]}: {error.message[:200]}",
            details={"reason": "malformed", "path": path[:200]},
        )
    try:
        _parse(str(verified.predicate["evaluated_at"]))
    except ValueError:
        raise CertificateRejected(
            "the certificate's evaluated_at is not a date-time",
            details={"reason": "malformed", "path": "$.predicate.evaluated_at"},
        ) from None


def _check_record(record: Mapping[str, Any]) -> None:
    """The record a certificate carries must read as a record (records._agent_record), as
    every record a mandate reads does: refused here, once, with the path of what does not."""
    try:
        AgentRecord.from_json(record, strict=False)
    except ValueError as exc:
        # The record's keys are the predicate's, under the same names.
        path = "$.predicate" + str(exc).split(":", 1)[0].removeprefix("$")
        raise CertificateRejected(
            f"the certificate's statement at {path[:200]}: {str(exc).split(': ', 1)[-1][:200]}",
            details={"reason": "malformed", "path": path[:200]},
        ) from None


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
