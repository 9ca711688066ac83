"""Token expiry and last use; mandate revisions kept; ledger rows name what allowed them

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("expires_at", UTCDateTime(), nullable=True))
        batch.add_column(sa.Column("last_used_at", UTCDateTime(), nullable=True))
    op.create_table(
        "mandate_revisions",
        sa.Column("mandate_id", sa.String(64), nullable=False),
        sa.Column("revision", sa.Integer(), nullable=False),
        sa.Column("holder", sa.String(64), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("granted_at", UTCDateTime(), nullable=False),
        sa.Column("granted_by", sa.String(32), nullable=True),
        sa.PrimaryKeyConstraint("mandate_id", "revision", name=op.f("pk_mandate_revisions")),
    )
    # Every existing mandate's current document becomes its revision N (the
    # earlier ones were overwritten before this revision). Its time: when it
    # was granted for revision 1, else `updated_at` (for a revoked mandate
    # that is when it was revoked: the grant's own time is gone). Who granted
    # it is not known: NULL.
    op.execute(
        "INSERT INTO mandate_revisions"
        " (mandate_id, revision, holder, document, digest, granted_at, granted_by)"
        " SELECT id, revision, holder, document, digest,"
        " CASE WHEN revision = 1 THEN granted_at ELSE updated_at END, NULL FROM mandates"
    )
    with op.batch_alter_table("ledger") as batch:
        batch.add_column(sa.Column("mandate_revision", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("record_eval_id", sa.String(32), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("ledger") as batch:
        batch.drop_column("record_eval_id")
        batch.drop_column("mandate_revision")
    op.drop_table("mandate_revisions")
    with op.batch_alter_table("tokens") as batch:
        batch.drop_column("last_used_at")
        batch.drop_column("expires_at")
