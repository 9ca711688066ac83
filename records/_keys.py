"""This store's signing keys and its name as an issuer (docs/certificates.md, "Keys").

Ed25519, made on first use; the private key is encrypted at rest with the
store's secret box (Fernet under HOLON_SECRET_KEY, like agent secrets), so a
copy of the database alone signs nothing. One key signs at a time; rotating
retires it, and a retired key stays in the published key set so every
certificate it signed still verifies.
"""

from __future__ import annotations

import base64
import builtins
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from records._certificates import jwk_of
from records._ids import ulid
from records._models import IssuerRow, SigningKeyRow
from records._registry import Registry
from records._rows import from_row
from records._types import utc_text, utc_text_or_none, utcnow

__all__ = ["KeyInfo", "KeyRegistry", "Signer"]

log = logging.getLogger(__name__)

T = TypeVar("T")


class Signer:
    """The key that signs now, decrypted for the length of one signature."""

    def __init__(self, issuer: str, kid: str, key: Ed25519PrivateKey) -> None:
        self.issuer = issuer
        self.kid = kid
        self.key = key


@dataclass(frozen=True)
class KeyInfo:
    """A signing key as anyone may see it: its public identity, never the private part."""

    kid: str
    created_at: datetime
    retired_at: datetime | None

    @property
    def active(self) -> bool:
        """It signs now (a retired key only verifies)."""
        return self.retired_at is None

    def to_json(self) -> dict[str, Any]:
        """Schema `entities/key`."""
        return {
            "kid": self.kid,
            "algorithm": "EdDSA",
            "curve": "Ed25519",
            "created_at": utc_text(self.created_at),
            "retired_at": utc_text_or_none(self.retired_at),
            "active": self.active,
        }


def _info(row: SigningKeyRow) -> KeyInfo:
    return from_row(KeyInfo, row)


class KeyRegistry(Registry):
    # -- in a caller's transaction ------------------------------------------------------

    def issuer_in(self, session: Session) -> str:
        """This store's issuer name, made (with the row lock held) on first use."""
        row = session.get(IssuerRow, 1, with_for_update=True)
        if row is None:
            row = IssuerRow(id=1, issuer=f"urn:holon:issuer:{ulid().lower()}", created_at=utcnow())
            session.add(row)
            session.flush()
        return row.issuer

    @staticmethod
    def _active(session: Session) -> SigningKeyRow | None:
        return session.scalars(
            select(SigningKeyRow).where(SigningKeyRow.retired_at.is_(None)).limit(1)
        ).first()

    def signer_in(self, session: Session) -> Signer:
        """The signing key, made on first use (`session` must then be a write). Only a
        first use takes the issuer row's lock, which serialises two of them on PostgreSQL
        (SQLite's writers are serialised already); issuing after that locks nothing."""
        row = self._active(session)
        issuer = session.get(IssuerRow, 1)
        if row is None or issuer is None:
            self.issuer_in(session)
            row = self._active(session) or self._new_key(session)
            issuer = session.get(IssuerRow, 1)
        assert issuer is not None
        raw = base64.b64decode(
            self._store.secret_box.decrypt(row.private_key, "the certificate signing key")
        )
        return Signer(issuer.issuer, row.kid, Ed25519PrivateKey.from_private_bytes(raw))

    def check_ready(self) -> None:
        """Refuse now (EnvironmentFault) what signing a record would refuse later: no
        secret key, or a key other than the one the signing key was encrypted with.
        An eval calls this before its first agent call, so it never pays for calls
        whose record it could not write."""
        box = self._store.secret_box
        with self._store.read() as session:
            row = self._active(session)
            if row is not None:
                box.decrypt(row.private_key, "the certificate signing key")

    def with_signer(self, work: Callable[[Session, Signer], T]) -> T:
        """`work` with the signing key, in a read transaction once the key exists: what
        anyone may fetch without a token (the key set, the revocation list) takes no
        write lock. The first use makes the key in a write transaction instead."""
        with self._store.read() as session:
            if self._active(session) is not None and session.get(IssuerRow, 1) is not None:
                return work(session, self.signer_in(session))
        result: T = self._write(lambda session: work(session, self.signer_in(session)))
        return result

    def _new_key(self, session: Session) -> SigningKeyRow:
        key = Ed25519PrivateKey.generate()
        raw = key.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )
        jwk = jwk_of(key.public_key())
        row = SigningKeyRow(
            kid=jwk["kid"],
            public_jwk=jwk,
            private_key=self._store.secret_box.encrypt(base64.b64encode(raw).decode("ascii")),
            created_at=utcnow(),
            retired_at=None,
        )
        session.add(row)
        session.flush()
        log.info("new certificate signing key %s", row.kid)
        return row

    # -- on their own -------------------------------------------------------------------

    def _write(self, work: Any) -> Any:
        for attempt in range(2):
            try:
                with self._store.write() as session:
                    return work(session)
            except IntegrityError:
                # Two first uses raced for the issuer row; the loser sees the winner's.
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def issuer(self) -> str:
        return self.with_signer(lambda _, signer: signer.issuer)

    def keys(self) -> builtins.list[KeyInfo]:
        """Every key, the signing one first (made now if there is none)."""

        def work(session: Session, _: Signer) -> builtins.list[KeyInfo]:
            rows = session.scalars(select(SigningKeyRow))
            return [_info(r) for r in sorted(rows, key=_order)]

        return self.with_signer(work)

    def list(self) -> builtins.list[dict[str, Any]]:
        """`keys()` as JSON (schema `entities/key`), what `GET /v1/keys` lists."""
        return [k.to_json() for k in self.keys()]

    def rotate(self) -> dict[str, Any]:
        """Retire the signing key and make a new one; the old one keeps verifying."""

        def work(session: Session) -> dict[str, Any]:
            self.issuer_in(session)
            now = utcnow()
            retired = []
            for row in session.scalars(
                select(SigningKeyRow).where(SigningKeyRow.retired_at.is_(None))
            ):
                row.retired_at = now
                retired.append(row.kid)
            session.flush()
            new = self._new_key(session)
            log.warning("certificate signing key rotated: %s retired, %s signs", retired, new.kid)
            return {"kid": new.kid, "retired": retired, "key": _info(new).to_json()}

        result: dict[str, Any] = self._write(work)
        return result

    def jwks(self) -> dict[str, Any]:
        """The public key set (RFC 7517), with the issuer it belongs to (holon's member)."""

        def work(session: Session, signer: Signer) -> dict[str, Any]:
            rows = sorted(session.scalars(select(SigningKeyRow)), key=_order)
            return {"issuer": signer.issuer, "keys": [dict(r.public_jwk) for r in rows]}

        return self.with_signer(work)


def _order(row: SigningKeyRow) -> tuple[bool, float]:
    # The signing key first, then the retired ones, newest first (kids are not in time order).
    return (row.retired_at is not None, -(row.retired_at or row.created_at).timestamp())
