"""Imported evals: an eval run elsewhere, whose report was checked and kept

Revision ID: 0012
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Null for an eval run here; for an imported one, where its report came from and when.
    with op.batch_alter_table("evals") as batch:
        batch.add_column(sa.Column("origin", sa.JSON(), nullable=True))
    op.create_table(
        "imported_reports",
        sa.Column("eval_id", sa.String(32), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["eval_id"], ["evals.id"], name=op.f("fk_imported_reports_eval_id_evals")
        ),
        sa.PrimaryKeyConstraint("eval_id", name=op.f("pk_imported_reports")),
    )


def downgrade() -> None:
    op.drop_table("imported_reports")
    with op.batch_alter_table("evals") as batch:
        batch.drop_column("origin")
