"""Issuers bound to keys: another issuer's name pinned to its public keys at first import
(or registration), its revocation list's address and last check; whether each imported
certificate's revocation was checked

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-05
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "certificate_issuers",
        sa.Column("issuer", sa.String(200), nullable=False),
        sa.Column("keys", sa.JSON(), nullable=False),
        sa.Column("pinned_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("history", sa.JSON(), nullable=False),
        sa.Column("revocations_url", sa.String(500), nullable=True),
        sa.Column("checked_at", UTCDateTime(), nullable=True),
        sa.Column("check_error", sa.String(500), nullable=True),
        sa.PrimaryKeyConstraint("issuer", name=op.f("pk_certificate_issuers")),
    )
    with op.batch_alter_table("certificates") as batch:
        batch.add_column(
            sa.Column("revocation_checked", sa.Boolean(), nullable=False, server_default=sa.true())
        )
        batch.add_column(sa.Column("revocation_checked_at", UTCDateTime(), nullable=True))
    # Imports made before: whether a revocation list was given is not known, so they read
    # as unchecked until a re-check (`holon certificates recheck`).
    op.execute("UPDATE certificates SET revocation_checked = false WHERE imported = true")


def downgrade() -> None:
    with op.batch_alter_table("certificates") as batch:
        batch.drop_column("revocation_checked_at")
        batch.drop_column("revocation_checked")
    op.drop_table("certificate_issuers")
