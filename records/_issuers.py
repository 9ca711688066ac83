"""Other issuers, known by name and keys together (docs/certificates.md, "Issuers: a name
bound to keys").

A key set names its issuer, but anyone can write any name into one: an
issuer's name alone proves nothing. So the first time this store takes an
issuer's certificate (or an operator registers the issuer), the issuer's
public keys are pinned; from then on, a certificate under that name is taken
only when a pinned key signed it, and its revocation list is read with the
pinned keys only. The pinned set changes only when an operator rotates it on
purpose, and each change is kept in the issuer's `history` (and logged).
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from records._certificates import MAX_ISSUER_CHARS, public_key_of, verify_revocations
from records._models import CertificateIssuerRow, CertificateRow
from records._registry import Registry
from records._types import utc_text, utcnow
from schema.errors import CertificateRejected, Conflict, NotFound, Refused, UsageError

__all__ = ["IssuerRegistry", "pinned_keys"]

log = logging.getLogger(__name__)

MAX_PINNED_KEYS = 32
MAX_URL_CHARS = 500
_HISTORY_KEPT = 100  # the latest changes of an issuer's keys; older ones are in the log


def pinned_keys(jwks: Any) -> builtins.list[dict[str, Any]]:
    """The public keys of a key set as pinned: each checked as a verifier checks it (an
    Ed25519 key whose thumbprint is its kid), reduced to what identifies it, by kid."""
    keys = jwks.get("keys") if isinstance(jwks, Mapping) else None
    if not isinstance(keys, list) or not keys:
        raise UsageError("the key set has no keys: nothing to pin", details={"path": "$.keys"})
    if len(keys) > MAX_PINNED_KEYS:
        raise UsageError(
            f"the key set has {len(keys)} keys, more than the {MAX_PINNED_KEYS} pinned",
            details={"path": "$.keys", "limit": MAX_PINNED_KEYS},
        )
    out: dict[str, dict[str, Any]] = {}
    for entry in keys:
        kid = str(entry.get("kid"))[:80] if isinstance(entry, Mapping) else "?"
        public_key_of(entry, kid)  # refuses what is not an Ed25519 key with this thumbprint
        out[kid] = {"kty": "OKP", "crv": "Ed25519", "x": entry["x"], "kid": kid}
    return [out[k] for k in sorted(out)]


def _check_kid(row: CertificateIssuerRow, kid: str) -> None:
    pinned = [k["kid"] for k in row.keys]
    if kid not in pinned:
        raise _unpinned(row.issuer, kid, pinned)


def _unpinned(issuer: str, kid: str, pinned: builtins.list[str]) -> CertificateRejected:
    return CertificateRejected(
        f"issuer {issuer} is pinned to other keys: key {kid[:80]} is not one of them "
        "(a key set can claim any issuer's name)",
        details={
            "reason": "unpinned_key",
            "issuer": issuer,
            "kid": kid[:80],
            "pinned": pinned,
        },
        hint="if the issuer rotated its keys: holon certificates issuers pin --jwks FILE|URL "
        "--rotate",
    )


def _view(row: CertificateIssuerRow) -> dict[str, Any]:
    return {
        "issuer": row.issuer,
        "kids": [k["kid"] for k in row.keys],
        "pinned_at": utc_text(row.pinned_at),
        "updated_at": utc_text(row.updated_at),
        "revocations_url": row.revocations_url,
        "checked_at": None if row.checked_at is None else utc_text(row.checked_at),
        "check_error": row.check_error,
        "history": row.history,
    }


class IssuerRegistry(Registry):
    def trusted(self, issuer: str, kid: str, given: Any) -> Any:
        """The key set to verify `issuer`'s certificate (signed by `kid`) and revocation list
        with: its pinned keys when it is known (refusing a kid outside them), else `given`,
        which the import then pins. This store's own name is pinned to its own keys."""
        own = self._store.keys.jwks()
        if issuer == own.get("issuer"):
            kids = [str(k.get("kid")) for k in own["keys"]]
            if kid not in kids:
                raise _unpinned(issuer, kid, kids)
            return own
        with self._store.read() as session:
            row = session.get(CertificateIssuerRow, issuer)
            if row is None:
                return given
            _check_kid(row, kid)
            return {"issuer": row.issuer, "keys": list(row.keys)}

    def pin_in(
        self,
        session: Session,
        issuer: str,
        kid: str,
        jwks: Any,
        *,
        revocations_url: str | None,
        by: str | None,
        now: datetime,
    ) -> None:
        """At an issuer's first import: pin the key set the certificate verified against.
        A known issuer is left as it is (its keys change only by rotation), and `kid` must
        be one of its keys (checked again here, in the import's transaction)."""
        row = session.get(CertificateIssuerRow, issuer, with_for_update=True)
        if row is not None:
            _check_kid(row, kid)
        else:
            keys = pinned_keys(jwks)
            session.add(self._new(issuer, keys, "pinned at first import", by, now))
            log.info("issuer %s pinned to keys %s", issuer, [k["kid"] for k in keys])
            session.flush()
            row = session.get(CertificateIssuerRow, issuer)
        if row is not None and revocations_url is not None:
            row.revocations_url = revocations_url[:MAX_URL_CHARS]

    def pin(
        self,
        jwks: Any,
        *,
        rotate: bool = False,
        revocations_url: str | None = None,
        by: str | None = None,
    ) -> dict[str, Any]:
        """Register an issuer by its key set (which names it), or, with `rotate`, replace the
        keys pinned for a known one; refused for this store's own name, and for a known
        issuer's other keys without `rotate`."""
        issuer = jwks.get("issuer") if isinstance(jwks, Mapping) else None
        if not isinstance(issuer, str) or not 0 < len(issuer) <= MAX_ISSUER_CHARS:
            raise UsageError(
                "the key set names no issuer (its 'issuer' member): keys are pinned to a name",
                details={"path": "$.issuer"},
            )
        if issuer == self._store.keys.issuer():
            raise Refused(
                f"{issuer} is this store's own issuer: its keys are this store's, not pinned",
                details={"issuer": issuer},
            )
        keys = pinned_keys(jwks)
        kids = [k["kid"] for k in keys]
        now = utcnow()
        with self._store.write() as session:
            row = session.get(CertificateIssuerRow, issuer, with_for_update=True)
            if row is None:
                row = self._new(issuer, keys, "registered", by, now)
                session.add(row)
            elif row.keys != keys:
                if not rotate:
                    raise Conflict(
                        f"issuer {issuer} is pinned to keys {', '.join(k['kid'] for k in row.keys)}"
                        f"; this key set holds {', '.join(kids)}",
                        details={"issuer": issuer, "pinned": [k["kid"] for k in row.keys]},
                        hint="to replace them on purpose: holon certificates issuers pin "
                        "--jwks FILE|URL --rotate",
                    )
                event = {
                    "at": utc_text(now),
                    "action": "rotated",
                    "by": by,
                    "kids": kids,
                    "previous": [k["kid"] for k in row.keys],
                }
                row.keys = keys
                row.updated_at = now
                row.history = [*row.history, event][-_HISTORY_KEPT:]
                log.warning("issuer %s keys rotated by %s: %s", issuer, by, event)
            if revocations_url is not None:
                row.revocations_url = revocations_url[:MAX_URL_CHARS]
            session.flush()
            return _view(row)

    def get(self, issuer: str) -> dict[str, Any]:
        with self._store.read() as session:
            row = session.get(CertificateIssuerRow, issuer)
            if row is None:
                raise NotFound(f"no issuer {issuer[:MAX_ISSUER_CHARS]!r} is known here")
            return _view(row)

    def list(self) -> builtins.list[dict[str, Any]]:
        with self._store.read() as session:
            rows = session.scalars(
                select(CertificateIssuerRow).order_by(CertificateIssuerRow.issuer).limit(1000)
            )
            return [_view(r) for r in rows]

    def checked(self, issuer: str, *, at: datetime, error: str | None) -> None:
        """Note a read of the issuer's revocation list: when, and what went wrong if it did."""
        with self._store.write() as session:
            row = session.get(CertificateIssuerRow, issuer, with_for_update=True)
            if row is not None:
                row.checked_at = at
                row.check_error = None if error is None else error[:500]

    def recheck(
        self, issuer: str, revocations: Any, *, now: datetime | None = None
    ) -> dict[str, Any]:
        """Read `issuer`'s signed revocation list (verified with its pinned keys only) against
        every unrevoked certificate imported from it: a listed one is revoked here (no
        mandate reads it again), the others are marked checked now. A list that does not
        verify changes no certificate, and is noted on the issuer (`check_error`)."""
        now = now or utcnow()
        with self._store.read() as session:
            row = session.get(CertificateIssuerRow, issuer)
            if row is None:
                raise NotFound(
                    f"no issuer {issuer[:MAX_ISSUER_CHARS]!r} is known here: nothing imported "
                    "from it to re-check",
                    details={"issuer": issuer[:MAX_ISSUER_CHARS]},
                )
            pinned = [dict(k) for k in row.keys]
        keys = {"issuer": issuer, "keys": pinned}
        try:
            revoked = verify_revocations(revocations, keys, issuer=issuer)
        except CertificateRejected as exc:
            if exc.details.get("reason") == "unknown_key":
                # Signed by a key the issuer rotated to, or by someone else: either way not
                # one this store pinned, and only an operator may say which.
                exc = CertificateRejected(
                    f"the revocation list of {issuer} is not signed by a key pinned for it "
                    f"({', '.join(str(k['kid']) for k in pinned)}): {exc.message}",
                    details=dict(exc.details),
                    hint="if the issuer rotated its keys: holon certificates issuers pin "
                    "--jwks FILE|URL --rotate",
                )
            self.checked(issuer, at=now, error=exc.message)
            raise exc from None
        listed, checked = [], 0
        with self._store.write() as session:
            rows = session.scalars(
                select(CertificateRow)
                .where(
                    CertificateRow.issuer == issuer,
                    CertificateRow.imported.is_(True),
                    CertificateRow.revoked_at.is_(None),
                )
                .with_for_update()
            )
            for cert in rows:
                entry = revoked.get(cert.id)
                if entry is None:
                    cert.revocation_checked = True
                    cert.revocation_checked_at = now
                    checked += 1
                    continue
                cert.revoked_at = now
                cert.revoked_reason = (
                    f"revoked by its issuer at {str(entry.get('revoked_at'))[:40]}: "
                    f"{str(entry.get('reason'))[:300]}"
                )
                cert.revocation_checked = True
                cert.revocation_checked_at = now
                listed.append(cert.id)
            issuer_row = session.get(CertificateIssuerRow, issuer, with_for_update=True)
            if issuer_row is not None:
                issuer_row.checked_at = now
                issuer_row.check_error = None
        if listed:
            log.warning("issuer %s revoked imported certificates %s", issuer, listed)
        return {"issuer": issuer, "checked_at": utc_text(now), "valid": checked, "revoked": listed}

    @staticmethod
    def _new(
        issuer: str, keys: builtins.list[dict[str, Any]], action: str, by: str | None, now: datetime
    ) -> CertificateIssuerRow:
        return CertificateIssuerRow(
            issuer=issuer,
            keys=keys,
            pinned_at=now,
            updated_at=now,
            history=[
                {"at": utc_text(now), "action": action, "by": by, "kids": [k["kid"] for k in keys]}
            ],
            revocations_url=None,
            checked_at=None,
            check_error=None,
        )
