"""Done evals' rendered reports (eval_reports), read by every process of a gateway

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from records._types import UTCDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "eval_reports",
        sa.Column("eval_id", sa.String(32), nullable=False),
        sa.Column("audience", sa.String(16), nullable=False),
        sa.Column("form", sa.String(8), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("compressed", sa.Boolean(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["eval_id"], ["evals.id"], name=op.f("fk_eval_reports_eval_id_evals")
        ),
        sa.PrimaryKeyConstraint("eval_id", "audience", "form", name=op.f("pk_eval_reports")),
    )


def downgrade() -> None:
    op.drop_table("eval_reports")
