"""Mandates: stored policy documents of callers (docs/gateway.md, "Mandates").

Documents arrive validated (gateway's mandate loader, against
schema/mandate.schema.json); this layer stores them, keyed by id, and never
interprets them: deciding is the gateway's job.

Every granted revision is kept (`mandate_revisions`), with its time and who
granted it: the token id over the API, `LOCAL` for the CLI on the store
(which has no authenticated identity to name: an OS user name would look
like one without being one). The current document stays in `mandates`.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from records._models import MandateRevisionRow, MandateRow
from records._pages import Page, check_limit, decode_cursor, page_of
from records._registry import Registry
from records._rows import from_row, to_row
from records._types import utc_text, utc_text_or_none, utcnow
from schema.canonical import digest
from schema.errors import NotFound, StaleRevision

__all__ = ["LOCAL", "GrantStatus", "MandateInfo", "MandateRegistry", "MandateRevision"]

LOCAL = "local"  # `granted_by` of a revision granted on the store itself

GrantStatus = Literal["created", "updated", "unchanged", "reinstated"]


@dataclass(frozen=True)
class MandateInfo:
    id: str
    holder: str
    document: dict[str, Any]
    digest: str
    revision: int
    granted_at: datetime
    updated_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def to_json(self) -> dict[str, Any]:
        """Schema `entities/mandate`."""
        return {
            "id": self.id,
            "holder": self.holder,
            "active": self.active,
            "revision": self.revision,
            "digest": self.digest,
            "granted_at": utc_text(self.granted_at),
            "updated_at": utc_text(self.updated_at),
            "revoked_at": utc_text_or_none(self.revoked_at),
            "mandate": self.document,
        }


@dataclass(frozen=True)
class MandateRevision:
    mandate_id: str
    revision: int
    holder: str
    document: dict[str, Any]
    digest: str
    granted_at: datetime
    granted_by: str | None  # a token id, LOCAL, or None (before history was kept)

    def to_json(self) -> dict[str, Any]:
        """Schema `entities/mandate-revision`."""
        return {
            "id": self.mandate_id,
            "revision": self.revision,
            "holder": self.holder,
            "digest": self.digest,
            "granted_at": utc_text(self.granted_at),
            "granted_by": self.granted_by,
            "mandate": self.document,
        }


def _revision(row: MandateRevisionRow) -> MandateRevision:
    return from_row(MandateRevision, row)


def _mandate(session: Session, mandate_id: str) -> MandateRow:
    row = session.get(MandateRow, mandate_id)
    if row is None:
        raise NotFound(f"no mandate {mandate_id!r}", details={"mandate": mandate_id})
    return row


def _info(row: MandateRow) -> MandateInfo:
    return from_row(MandateInfo, row)


class MandateRegistry(Registry):
    def grant(
        self,
        document: dict[str, Any],
        *,
        granted_by: str = LOCAL,
        if_revision: int | None = None,
    ) -> tuple[GrantStatus, MandateInfo]:
        """Store `document` under its id: a new mandate, or a new revision of one (kept, with
        its time and `granted_by`: a token id, or LOCAL).

        `if_revision`: only if the mandate is at that revision now (0: only if there is
        none), else StaleRevision naming the current one, and nothing is written: two
        operators editing one mandate cannot overwrite each other unseen."""
        mandate_id = str(document["id"])
        holder = str(document["holder"])
        document_digest = digest(document)
        now = utcnow()
        with self._store.write() as session:
            # Locked (PostgreSQL; SQLite's writer holds the database): two grants of
            # one id at once make two revisions, one after the other.
            row = session.get(MandateRow, mandate_id, with_for_update=True)
            current = 0 if row is None else row.revision
            if if_revision is not None and if_revision != current:
                raise StaleRevision(
                    f"mandate {mandate_id} is at revision {current}, not {if_revision}: "
                    "it changed since it was read",
                    hint=f"holon mandates show {mandate_id}, then grant again with "
                    f"--if-revision {current} if the change still holds",
                    details={"mandate": mandate_id, "revision": current, "expected": if_revision},
                )
            status: GrantStatus
            if row is None:
                # Revision 0 of nothing: the grant below makes it revision 1, as it makes
                # every other revision.
                row = MandateRow(id=mandate_id, revision=0, granted_at=now)
                session.add(row)
                status = "created"
            elif row.digest == document_digest and row.revoked_at is None:
                status = "unchanged"
            else:
                status = "reinstated" if row.revoked_at is not None else "updated"
            if status != "unchanged":
                row.holder = holder
                row.document = document
                row.digest = document_digest
                row.revision += 1
                row.updated_at = now
                row.revoked_at = None
                # The revision kept is the mandate as it now stands, granted now.
                session.add(
                    to_row(
                        MandateRevisionRow,
                        row,
                        mandate_id=mandate_id,
                        granted_at=now,
                        granted_by=granted_by,
                    )
                )
            session.flush()
            return status, _info(row)

    def revisions(self, mandate_id: str) -> builtins.list[MandateRevision]:
        """Every revision of the mandate, oldest first (NotFound for an unknown mandate)."""
        with self._store.read() as session:
            _mandate(session, mandate_id)  # NotFound for an unknown one
            rows = session.scalars(
                select(MandateRevisionRow)
                .where(MandateRevisionRow.mandate_id == mandate_id)
                .order_by(MandateRevisionRow.revision)
            )
            return [_revision(r) for r in rows]

    def get(self, mandate_id: str) -> MandateInfo:
        with self._store.read() as session:
            return _info(_mandate(session, mandate_id))

    def for_holder(self, holder: str) -> builtins.list[MandateInfo]:
        """The holder's active mandates, by id (the order decisions try them in)."""
        with self._store.read() as session:
            rows = session.scalars(
                select(MandateRow)
                .where(MandateRow.holder == holder, MandateRow.revoked_at.is_(None))
                .order_by(MandateRow.id)
            )
            return [_info(r) for r in rows]

    def list(
        self,
        *,
        holder: str | None = None,
        include_revoked: bool = False,
        cursor: str | None = None,
        limit: int = 100,
    ) -> Page[MandateInfo]:
        check_limit(limit)
        after = decode_cursor(cursor)
        with self._store.read() as session:
            query = select(MandateRow).order_by(MandateRow.id).limit(limit + 1)
            if holder is not None:
                query = query.where(MandateRow.holder == holder)
            if not include_revoked:
                query = query.where(MandateRow.revoked_at.is_(None))
            if after is not None:
                query = query.where(MandateRow.id > after)
            rows = [_info(r) for r in session.scalars(query)]
        return page_of(rows, limit, lambda info: info.id)

    def revoke(self, mandate_id: str) -> MandateInfo:
        with self._store.write() as session:
            row = _mandate(session, mandate_id)
            if row.revoked_at is None:
                row.revoked_at = utcnow()
                row.updated_at = row.revoked_at
            return _info(row)
